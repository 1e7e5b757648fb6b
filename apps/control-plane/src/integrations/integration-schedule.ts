import type { EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import { nextRunAt } from '@pipeline/schedules';
import type { JobService } from '../jobs/job.service';
import { dispatchIntegrationRun } from './integration-run-dispatch';
import type { DueFinder } from '../jobs/scheduler';
import { returnedRows } from '../database/returned-rows';
import { IntegrationEntity } from './integration.entity';

const BATCH = 200;

/** Whether scheduled runs have anything to do: some task other than real-time `events`. */
export function hasScheduledWork(integration: IntegrationEntity): boolean {
  return integration.config.tasks.some((task) => task.task_type !== 'events');
}

/**
 * When the scheduler next queues a run: every `frequencyValue` hours or days from midnight UTC
 * of the creation day; null when it is not scheduled (draft, paused, deleted, or only
 * real-time tasks).
 */
export function nextRunOf(integration: IntegrationEntity, after: Date): Date | null {
  if (integration.state !== 'active' || integration.status === 'draft' || !hasScheduledWork(integration))
    return null;
  return nextRunAt(
    {
      frequencyValue: integration.schedule.frequencyValue,
      frequencyUnit: integration.schedule.frequencyUnit,
      anchorTime: '00:00',
      anchorTimezone: 'UTC',
    },
    after,
    integration.createdAt,
  );
}

/** Refusals that skip a slot instead of failing the tick. */
const skipped = ['run_already_active', 'account_limit_reached'];

/**
 * Promotes drafts whose destination app became usable to `pending` (due at once), then queues
 * a `schedule` run of every active integration whose `next_run_at` has come and moves it on;
 * a slot that finds a run queued or running (or an account whose queued runs are at their
 * limit) is skipped.
 */

export function dueIntegrations(jobs: JobService): DueFinder {
  return async (tx: EntityManager, now: Date) => {
    await tx.query(
      `UPDATE integrations i SET status = 'pending', next_run_at = $1, updated_at = now()
         FROM apps d
        WHERE d.id = i.destination_app_id AND d.state = 'active'
          AND i.status = 'draft' AND i.state = 'active'`,
      [now],
    );
    const due = returnedRows<{ id: string }>(
      await tx.query(
        `SELECT id FROM integrations
          WHERE state = 'active' AND status <> 'draft' AND next_run_at <= $1
          ORDER BY next_run_at FOR UPDATE SKIP LOCKED LIMIT ${BATCH}`,
        [now],
      ),
    );
    const repository = tx.getRepository(IntegrationEntity);
    let queued = 0;
    for (const { id } of due) {
      const integration = await repository.findOneByOrFail({ id });
      if (hasScheduledWork(integration)) {
        try {
          await dispatchIntegrationRun(jobs, integration, 'schedule', tx);
          queued += 1;
        } catch (error) {
          // A slot of an account whose queue is full is skipped like one whose run is still active.
          if (!(error instanceof AppError && skipped.includes(error.code))) throw error;
        }
      }
      await repository.update(id, { nextRunAt: nextRunOf(integration, now) });
    }
    return queued;
  };
}
