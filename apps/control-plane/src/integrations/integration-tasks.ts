import type { ProblemFieldError } from '../http/problem';
import { unprocessable } from '../http/api-errors';
import { importTasksOf } from '@pipeline/catalog';

/**
 * The task types of `config.tasks` (docs/delivery-and-destinations.md, "Integration runs"):
 * - `events`: tracked events forwarded as they arrive, by the delivery consumers (not by
 *   scheduled runs);
 * - `user_attributes` `{ fields?: string[] }`: identified users with their traits (only
 *   `fields` when given), as identify calls;
 * - `recent_events` `{ events?: string[] }`: track and page events received in the last
 *   `schedule.rollingWindowDays` days (only the named ones when given);
 * - `source_stream` `{ stream: string, userIdField?: string }`: the rows a source of the
 *   integration's source app imported into `<app type>_<stream>`, as identify calls with
 *   `userIdField` (default `id`) as the user id and the row's top-level fields as traits.
 */
export const taskTypes = ['events', 'user_attributes', 'recent_events', 'source_stream'] as const;
export type TaskType = (typeof taskTypes)[number];

export type ScheduledTask =
  | { index: number; type: 'user_attributes'; fields: string[] | null }
  | { index: number; type: 'recent_events'; events: string[] | null }
  | { index: number; type: 'source_stream'; stream: string; userIdField: string };

interface TaskInput {
  task_type: string;
  [field: string]: unknown;
}

const stringList = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((v) => typeof v === 'string' && v.length > 0);

/**
 * The tasks scheduled runs execute, checked against their documented fields; a config that
 * does not follow them is a 422 naming every problem.
 */
export function scheduledTasks(tasks: readonly TaskInput[], sourceAppType: string | null): ScheduledTask[] {
  const errors: ProblemFieldError[] = [];
  const scheduled: ScheduledTask[] = [];
  tasks.forEach((task, index) => {
    const path = `body.config.tasks[${index}]`;
    const fail = (field: string, message: string) => errors.push({ path: `${path}.${field}`, message });
    switch (task.task_type) {
      case 'events':
        return;
      case 'user_attributes': {
        if (task.fields !== undefined && !stringList(task.fields))
          return fail('fields', 'must be a list of trait names');
        scheduled.push({ index, type: 'user_attributes', fields: task.fields ?? null });
        return;
      }
      case 'recent_events': {
        if (task.events !== undefined && !stringList(task.events))
          return fail('events', 'must be a list of event names');
        scheduled.push({ index, type: 'recent_events', events: task.events ?? null });
        return;
      }
      case 'source_stream': {
        if (!sourceAppType) return fail('stream', 'needs the integration’s sourceAppId');
        const offered = importTasksOf(sourceAppType);
        if (typeof task.stream !== 'string' || !offered.includes(task.stream))
          return fail(
            'stream',
            `must be one of the streams ${sourceAppType} imports: ${offered.join(', ') || 'none'}`,
          );
        if (
          task.userIdField !== undefined &&
          (typeof task.userIdField !== 'string' || task.userIdField === '')
        )
          return fail('userIdField', 'must be a field name');
        scheduled.push({
          index,
          type: 'source_stream',
          stream: task.stream,
          userIdField: typeof task.userIdField === 'string' ? task.userIdField : 'id',
        });
        return;
      }
      default:
        errors.push({ path: `${path}.task_type`, message: `must be one of ${taskTypes.join(', ')}` });
    }
  });
  if (errors.length > 0)
    throw unprocessable('invalid_integration_task', 'The integration’s tasks are not valid', errors);
  return scheduled;
}
