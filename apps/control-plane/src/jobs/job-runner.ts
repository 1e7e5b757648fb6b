import { In, type EntityManager } from 'typeorm';
import {
  Interrupted,
  NOW,
  QueueWorker,
  type ClaimedItem,
  type Execution,
  type QueueMetrics,
  type ReapedItem,
  type WorkerSettings,
} from '../work-queue/pg-work-queue';
import { JobEntity, type JobKind } from './job.entity';
import { classifyFailure, newErrorReference, withheldFields } from '../work-queue/tenant-error';
import {
  JobDeferred,
  TransientJobError,
  type JobCounts,
  type JobExecutor,
  type JobTransition,
} from './job-executor';
import { retryDelayMs } from './retry-backoff';

/** How a job's attempt ended: settled, put back for a retry or a deferral, or taken from this worker. */
export type JobOutcome = 'succeeded' | 'failed' | 'retried' | 'deferred' | 'interrupted';

/** What the job runner reports to the service's metrics, next to the queue's requeues. */
export interface JobMetrics extends QueueMetrics {
  jobFinished(kind: string, outcome: JobOutcome, seconds: number): void;
}

export interface JobRunnerOptions extends WorkerSettings {
  metrics?: JobMetrics;
  /** Backoff before the first retry of a transient failure; it doubles per attempt up to retryMaxMs. */
  retryBaseMs: number;
  retryMaxMs: number;
}

/**
 * Runs sync jobs and integration runs from the `jobs` table on the shared PostgreSQL work queue,
 * routing each to the executor of its kind. It owns the job's state machine:
 * queued -> running -> succeeded | failed | cancelled, and back to queued for a retry after a
 * transient error (with exponential backoff held in `run_after`, so a restart does not forget
 * it), for a deferral, or when its worker died or stopped. Each state change and the owner's
 * status update (the executor's onTransition) commit in one transaction. `maxAttempts` counts
 * claims in all, transient retries and lost workers included.
 */
export class JobRunner extends QueueWorker {
  private readonly executors = new Map<JobKind, JobExecutor>();

  constructor(private readonly options: JobRunnerOptions) {
    super(
      options,
      { name: 'jobs', waitingStatus: 'queued', claimableWhen: 'run_after <= now()', kindOf: 'kind' },
      'job',
    );
  }

  register(executor: JobExecutor): this {
    this.executors.set(executor.kind, executor);
    return this;
  }

  protected async execute(item: ClaimedItem, execution: Execution): Promise<void> {
    const job = await this.options.dataSource.getRepository(JobEntity).findOneByOrFail({ id: item.id });
    const outcome = await this.run(job, item, execution);
    this.options.metrics?.jobFinished(job.kind, outcome, (Date.now() - execution.startedAt) / 1000);
  }

  private async run(job: JobEntity, item: ClaimedItem, execution: Execution): Promise<JobOutcome> {
    const { dataSource, logger } = this.options;
    const executor = this.executors.get(job.kind);
    if (!executor) {
      const owned = await execution.settle({
        status: 'failed',
        finished_at: NOW,
        error: JSON.stringify({ code: 'no_executor', message: `No executor runs ${job.kind} jobs here` }),
      });
      return owned ? 'failed' : 'interrupted';
    }
    const counts: JobCounts = { rowsRead: 0, rowsWritten: 0 };
    try {
      await dataSource.transaction(async (tx) => {
        await execution.update({ updated_at: NOW }, tx);
        await executor.onTransition(tx, job, { to: 'running' });
      });
      logger.info('job started', { jobId: job.id, kind: job.kind, attempt: item.attempts });
      const result = await execution.untilAborted(
        executor.execute({
          job,
          signal: execution.signal,
          progress: async (now, write) => {
            Object.assign(counts, now);
            const values = { rows_read: now.rowsRead, rows_written: now.rowsWritten, updated_at: NOW };
            if (!write) return execution.update(values);
            await dataSource.transaction(async (tx) => {
              await execution.update(values, tx);
              await write(tx);
            });
          },
        }),
      );
      Object.assign(counts, result);
      const owned = await this.settle(
        execution,
        executor,
        job,
        { to: 'succeeded', counts },
        {
          status: 'succeeded',
          finished_at: NOW,
          error: null,
        },
      );
      logger.info('job succeeded', { jobId: job.id, kind: job.kind, ...counts });
      return owned ? 'succeeded' : 'interrupted';
    } catch (thrown) {
      const error = execution.signal.aborted ? (execution.signal.reason as unknown) : thrown;
      return this.afterError(execution, executor, job, item, counts, error);
    }
  }

  private async afterError(
    execution: Execution,
    executor: JobExecutor,
    job: JobEntity,
    item: ClaimedItem,
    counts: JobCounts,
    error: unknown,
  ): Promise<JobOutcome> {
    const { logger } = this.options;
    const rows = { rows_read: counts.rowsRead, rows_written: counts.rowsWritten };
    if (error instanceof Interrupted) {
      // A lost job belongs to someone else now (the reaper or a cancel): nothing to write.
      if (error.reason === 'shutdown')
        await execution.putBack(
          'queued',
          (tx) => executor.onTransition(tx, job, { to: 'queued', reason: 'requeued' }),
          computeOf(execution),
        );
      logger.info('job interrupted', { jobId: job.id, reason: error.reason });
      return 'interrupted';
    }
    if (error instanceof JobDeferred) {
      const owned = await this.settle(
        execution,
        executor,
        job,
        { to: 'queued', reason: 'deferred' },
        {
          ...rows,
          status: 'queued',
          run_after: error.notBefore,
          started_at: null,
          heartbeat_at: null,
          attempts: { decrement: true },
        },
      );
      logger.info('job deferred', { jobId: job.id, reason: error.reason, notBefore: error.notBefore });
      return owned ? 'deferred' : 'interrupted';
    }
    const reference = newErrorReference();
    const classified = classifyFailure(error, reference);
    const { error: described, internal } = classified;
    // The tenant sees `described`; what it withholds is logged here under the same reference.
    const withheld = { accountId: job.accountId, ...withheldFields(classified, reference) };
    if (error instanceof TransientJobError && item.attempts < this.options.maxAttempts) {
      const retryAt = new Date(Date.now() + retryDelayMs(item.attempts, this.options));
      const owned = await this.settle(
        execution,
        executor,
        job,
        { to: 'queued', reason: 'retry', error: described },
        {
          ...rows,
          status: 'queued',
          run_after: retryAt,
          started_at: null,
          heartbeat_at: null,
          error: JSON.stringify(described),
        },
      );
      logger.warn('job will be retried', {
        jobId: job.id,
        attempt: item.attempts,
        retryAt,
        error: described,
        ...withheld,
      });
      return owned ? 'retried' : 'interrupted';
    }
    const owned = await this.settle(
      execution,
      executor,
      job,
      { to: 'failed', error: described },
      {
        ...rows,
        status: 'failed',
        finished_at: NOW,
        error: JSON.stringify(described),
      },
    );
    const failed = { jobId: job.id, kind: job.kind, error: described, ...withheld };
    if (internal) logger.error('job failed', failed);
    else logger.warn('job failed', failed);
    return owned ? 'failed' : 'interrupted';
  }

  private async settle(
    execution: Execution,
    executor: JobExecutor,
    job: JobEntity,
    transition: JobTransition,
    values: Record<string, unknown>,
  ): Promise<boolean> {
    const counts = transition.to === 'succeeded' ? transition.counts : undefined;
    return execution.settle(
      {
        ...values,
        ...computeOf(execution),
        ...(counts ? { rows_read: counts.rowsRead, rows_written: counts.rowsWritten } : {}),
      },
      (tx) => executor.onTransition(tx, job, transition),
    );
  }

  protected override async onReaped(tx: EntityManager, items: ReapedItem[]): Promise<void> {
    const jobs = await tx.getRepository(JobEntity).findBy({ id: In(items.map((i) => i.id)) });
    for (const job of jobs) {
      const executor = this.executors.get(job.kind);
      if (!executor) continue;
      const transition: JobTransition =
        job.status === 'failed'
          ? {
              to: 'failed',
              error: job.error?.code ? { code: job.error.code, message: job.error.message } : lost,
            }
          : { to: 'queued', reason: 'requeued' };
      await executor.onTransition(tx, job, transition);
    }
  }
}

/** The attempt's running time, added to the job's `compute_ms` whatever its outcome (usage metering). */
const computeOf = (execution: Execution) => ({ compute_ms: { increment: Date.now() - execution.startedAt } });

const lost = { code: 'worker_lost', message: 'The worker executing the job stopped' };
