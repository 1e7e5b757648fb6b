import type { AccountJobKind, JobStatus, JobTrigger } from './job.entity';

/** A dispatched unit of sync work, as `POST /sources/{id}/sync` returns it. */
export interface JobView {
  /** @format uuid */
  id: string;
  kind: AccountJobKind;
  /** `queued` -> `running` -> `succeeded` / `failed` / `cancelled`. */
  status: JobStatus;
  trigger: JobTrigger;
  sourceId: string | null;
  integrationId: string | null;
  rowsRead: number;
  rowsWritten: number;
  /**
   * Why the job failed (or will be retried): a vendor's answer or a documented code, or
   * `internal_error` "An internal error occurred; reference …" (the detail stays in the logs).
   */
  error: { message: string; code?: string } | null;
  /** Times a worker took the job; transient failures are retried until the configured maximum. */
  attempts: number;
  /**
   * For a queued job that is waiting out a retry backoff or a dependency: when it may start.
   * @format date-time
   */
  notBefore: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  startedAt: string | null;
  /** @format date-time */
  finishedAt: string | null;
}
