import { TaskEntity } from './task.entity';
import { initialProgress } from './task.service';
import {
  Interrupted,
  NOW,
  QueueWorker,
  type ClaimedItem,
  type Execution,
  type QueueMetrics,
  type WorkerSettings,
} from '../work-queue/pg-work-queue';
import { TaskRunEntity, type RunError, type RunProgress } from './task-run.entity';
import { findTemplate } from './templates/catalog';
import type { StepContext } from './templates/template';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import { isWarehouseUnavailable } from '../http/api-errors';
import { classifyFailure, newErrorReference, withheldFields } from '../work-queue/tenant-error';

/** How a task run's execution ended. */
export type TaskRunOutcome = 'succeeded' | 'failed' | 'interrupted';

/** The kind label of task runs, next to the job kinds, in the queue metrics. */
export const TASK_RUN_KIND = 'task_run';

/** What the task worker reports to the service's metrics, next to the queue's requeues. */
export interface TaskRunMetrics extends QueueMetrics {
  taskRunFinished(template: string, outcome: TaskRunOutcome, seconds: number): void;
}

export interface TaskWorkerOptions extends WorkerSettings {
  metrics?: TaskRunMetrics;
  /** Where each account's warehouse is, for the templates' steps. */
  warehouse: AccountWarehouses;
  /** Called before each step, with the run's abort signal (tests use it to hold a run mid-way). */
  beforeStep?: (run: { id: string; taskId: string }, stepId: string, signal: AbortSignal) => Promise<void>;
}

/**
 * Executes task runs from the PostgreSQL queue (the task_runs table) on a PgWorkQueue, which
 * claims, heartbeats, reaps and stops; this class runs a claimed run's template steps and records
 * their progress. Every write is conditioned on the run still being this worker's, so a late
 * write of a lost or cancelled run changes nothing.
 */
export class TaskWorker extends QueueWorker {
  constructor(private readonly options: TaskWorkerOptions) {
    super(options, { name: 'task_runs', waitingStatus: 'pending', kindOf: `'${TASK_RUN_KIND}'` }, 'task run');
  }

  /** Runs the template's steps, recording progress; ends in succeeded or failed (or stops if interrupted). */
  protected async execute(item: ClaimedItem, execution: Execution): Promise<void> {
    const { template, outcome } = await this.run(item, execution);
    this.options.metrics?.taskRunFinished(template, outcome, (Date.now() - execution.startedAt) / 1000);
  }

  private async run(
    item: ClaimedItem,
    execution: Execution,
  ): Promise<{ template: string; outcome: TaskRunOutcome }> {
    const { dataSource, logger } = this.options;
    const signal = execution.signal;
    const run = await dataSource.getRepository(TaskRunEntity).findOneByOrFail({ id: item.id });
    const task = await dataSource.getRepository(TaskEntity).findOneBy({ id: run.taskId });
    const template = task ? findTemplate(task.templateId) : undefined;
    if (!task || !template) {
      const owned = await this.finish(execution, 'failed', null, {
        code: 'unknown_template',
        message: `Template ${task?.templateId ?? '(task deleted)'} is not offered by this version`,
      });
      return { template: 'unknown', outcome: owned ? 'failed' : 'interrupted' };
    }
    const progress = initialProgress(template);
    logger.info('task run started', {
      runId: run.id,
      taskId: run.taskId,
      templateId: template.id,
      attempt: run.attempts,
    });

    const state: Record<string, unknown> = {};
    const context: StepContext<never> = {
      accountId: run.accountId,
      runId: run.id,
      params: run.params as never,
      dataSource,
      warehouses: this.options.warehouse,
      signal,
      checkpoint: () => execution.checkpoint(),
      now: new Date(),
      state,
    };
    let current: (typeof template.steps)[number] | undefined;
    try {
      for (const step of template.steps) {
        current = step;
        context.checkpoint();
        this.markStep(progress, step.id, 'running');
        await execution.update({ progress: JSON.stringify(progress), updated_at: NOW });
        if (this.options.beforeStep)
          await execution.untilAborted(this.options.beforeStep(run, step.id, signal));
        state[step.id] = await execution.untilAborted(step.run(context));
        this.markStep(progress, step.id, 'succeeded');
        await execution.update({ progress: JSON.stringify(progress), updated_at: NOW });
      }
      const last = template.steps[template.steps.length - 1];
      const report = (last ? state[last.id] : {}) as Record<string, unknown>;
      const finished = await this.finish(execution, 'succeeded', report, null, progress);
      logger.info('task run finished', { runId: run.id, status: finished ? 'succeeded' : 'lost' });
      return { template: template.id, outcome: finished ? 'succeeded' : 'interrupted' };
    } catch (error) {
      const interruption = signal.aborted ? signal.reason : error;
      if (interruption instanceof Interrupted) {
        if (interruption.reason === 'shutdown') await execution.putBack('pending');
        logger.info('task run interrupted', {
          runId: run.id,
          reason: interruption.reason,
          step: current?.id,
        });
        return { template: template.id, outcome: 'interrupted' };
      }
      if (current) this.markStep(progress, current.id, 'failed');
      const reference = newErrorReference();
      const classified = classifyFailure(error, reference);
      const { error: shown, internal } = classified;
      // The tenant sees `shown`; the text it withholds is logged under the same reference.
      const failed = {
        runId: run.id,
        accountId: run.accountId,
        step: current?.id,
        error: shown,
        ...withheldFields(classified, reference),
        // The warehouse's outage is shown by its code; the driver's text is for the logs only.
        ...(isWarehouseUnavailable(error) ? { cause: String(error.cause) } : {}),
      };
      if (internal) logger.error('task run failed', failed);
      else logger.warn('task run failed', failed);
      const owned = await this.finish(execution, 'failed', null, { ...shown, step: current?.id }, progress);
      return { template: template.id, outcome: owned ? 'failed' : 'interrupted' };
    }
  }

  private markStep(progress: RunProgress, stepId: string, status: 'running' | 'succeeded' | 'failed'): void {
    const step = progress.steps.find((s) => s.id === stepId);
    if (!step) return;
    const now = new Date().toISOString();
    step.status = status;
    if (status === 'running') step.startedAt = now;
    else step.finishedAt = now;
    progress.completedSteps = progress.steps.filter((s) => s.status === 'succeeded').length;
    progress.currentStep = status === 'running' ? stepId : null;
  }

  private finish(
    execution: Execution,
    status: 'succeeded' | 'failed',
    result: Record<string, unknown> | null,
    error: RunError | null,
    progress?: RunProgress,
  ): Promise<boolean> {
    return execution.settle({
      status,
      result: result === null ? null : JSON.stringify(result),
      error: error === null ? null : JSON.stringify(error),
      ...(progress ? { progress: JSON.stringify(progress) } : {}),
      finished_at: NOW,
    });
  }
}
