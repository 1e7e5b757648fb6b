import type { EntityManager } from 'typeorm';
import { TenantFacingError } from '../work-queue/tenant-error';
import type { JobEntity, JobKind } from './job.entity';

/** Counts a job reports while it runs and when it ends; rows written feed usage metering. */
export interface JobCounts {
  rowsRead: number;
  rowsWritten: number;
}

/** What an executor gets for one claimed job. */
export interface JobContext {
  job: JobEntity;
  /** Aborted when the job is cancelled, taken from this worker, or the process stops. */
  signal: AbortSignal;
  /**
   * Saves the counts so far and touches the heartbeat. Throws (an interruption) when the job no
   * longer belongs to this worker, so a long loop that calls it stops writing.
   *
   * `write` runs in the same transaction, after the job's row is locked and found still owned:
   * an executor's own state (a watermark, a cursor) then commits only while the job is its own,
   * and a cancel or a reaper that took the job first rolls it back.
   */
  progress(counts: JobCounts, write?: (tx: EntityManager) => Promise<void>): Promise<void>;
}

/**
 * A transient failure (network, 429 or 5xx that outlasted the client's own retries): the job is
 * queued again after a backoff, until its attempts run out; then it fails with this error.
 * Its code and message are shown to the tenant, so they must be written for them.
 */
export class TransientJobError extends TenantFacingError {
  constructor(code: string, message: string, detail?: string) {
    super(code, message, detail);
    this.name = 'TransientJobError';
  }
}

/** A permanent failure with a stable code (bad credentials, invalid configuration), shown to the tenant. */
export class JobFailure extends TenantFacingError {
  constructor(code: string, message: string, detail?: string) {
    super(code, message, detail);
    this.name = 'JobFailure';
  }
}

/**
 * The job cannot run yet (for example the source data an integration needs is not imported):
 * it goes back to the queue until `notBefore` without counting as a failure or an attempt.
 */
export class JobDeferred extends Error {
  constructor(
    readonly reason: string,
    readonly notBefore: Date,
  ) {
    super(`job deferred: ${reason}`);
    this.name = 'JobDeferred';
  }
}

/** How a job's state changed, told to its kind so the owning source or integration follows. */
export type JobTransition =
  | { to: 'running' }
  | { to: 'succeeded'; counts: JobCounts }
  | { to: 'failed'; error: { code: string; message: string } }
  | { to: 'queued'; reason: 'retry' | 'deferred' | 'requeued'; error?: { code: string; message: string } }
  | { to: 'cancelled' };

/** Runs the jobs of one kind; the job runner claims, heartbeats, retries and recovers them. */
export interface JobExecutor {
  readonly kind: JobKind;
  execute(context: JobContext): Promise<JobCounts>;
  /**
   * Called in the transaction that records the job's new state, so the owner's status fields
   * (integrationStatus, lastSyncAt, lastError, consecutiveFailures, activeImportJobId) never
   * disagree with the job.
   */
  onTransition(tx: EntityManager, job: JobEntity, transition: JobTransition): Promise<void>;
}
