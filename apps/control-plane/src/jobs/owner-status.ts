import type { JobTransition } from './job-executor';

/** The owner's status names for each state of its job (sources and integrations name them differently). */
export interface OwnerStatuses<S extends string> {
  running: S;
  queued: S;
  succeeded: S;
  failed: S;
  paused: S;
  /** No job queued or running, the last one cancelled by request: waiting for the next. */
  idle: S;
}

export interface OwnerFields<S extends string> {
  status: S;
  lastSyncAt?: Date;
  lastError?: { code: string; message: string; at: string } | null;
  consecutiveFailures?: number;
}

/**
 * What a source or an integration records when its job changes state: the status (kept
 * `paused` while the owner is inactive); on success `lastSyncAt`, no `lastError` and no
 * failures counted; on failure the error and one more consecutive failure; a retry records its
 * transient error without counting it; a cancel leaves the owner idle, its last sync and error
 * as they were.
 */
export function ownerFieldsAfter<S extends string>(
  transition: JobTransition,
  owner: { paused: boolean; consecutiveFailures: number },
  statuses: OwnerStatuses<S>,
  now: Date = new Date(),
): OwnerFields<S> {
  const status = (s: S) => (owner.paused ? statuses.paused : s);
  const at = now.toISOString();
  switch (transition.to) {
    case 'running':
      return { status: status(statuses.running) };
    case 'queued':
      return {
        status: status(statuses.queued),
        ...(transition.error ? { lastError: { ...transition.error, at } } : {}),
      };
    case 'succeeded':
      return { status: status(statuses.succeeded), lastSyncAt: now, lastError: null, consecutiveFailures: 0 };
    case 'failed':
      return {
        status: status(statuses.failed),
        lastError: { ...transition.error, at },
        consecutiveFailures: owner.consecutiveFailures + 1,
      };
    case 'cancelled':
      return { status: status(statuses.idle) };
  }
}
