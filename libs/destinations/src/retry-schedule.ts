// When a failed delivery is tried again, and how a dead letter's reason is labelled: pure, so
// the arithmetic that decides between another attempt and the dead letters is mutation-tested.

export interface RetryPolicy {
  /** Attempts in all, the first included; after the last a retryable failure is dead-lettered too. */
  maxAttempts: number;
  /** The wait before the second attempt; it doubles for each further one (with jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 6, baseDelayMs: 2000, maxDelayMs: 10 * 60_000 };

/** Exponential backoff with jitter (half to all of the step), at least the vendor's Retry-After. */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs = 0,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.max(retryAfterMs, Math.round(step * (0.5 + random() / 2)));
}

/**
 * Whether a failure of `attempt` (1 for the first) goes to the retry topic: a retryable one
 * while attempts remain; a permanent one, or the last attempt's, goes to the dead letters.
 */
export const shouldRetry = (retryable: boolean, attempt: number, policy: RetryPolicy): boolean =>
  retryable && attempt < policy.maxAttempts;

/** The attempt a failure was: one more than the retry record's attempt header, 1 without it. */
export const attemptAfter = (attemptHeader: string | undefined): number => Number(attemptHeader ?? 0) + 1;

/**
 * The dead-letter metric's reason label: the reason's leading code (`data_error`,
 * `unstorable_event`, `http_400`, ...), which our code writes, never tenant data; anything else
 * is `other`, so the label stays bounded.
 */
export function reasonCategory(reason: string): string {
  const code = reason.split(':', 1)[0] ?? '';
  return /^(http_\d{3}|[a-z][a-z_]{0,39})$/.test(code) ? code : 'other';
}

/** A dead letter's metric label: `attempts_exhausted` for a retryable failure, else its reason's code. */
export const deadLetterReason = (retryable: boolean, reason: string): string =>
  retryable ? 'attempts_exhausted' : reasonCategory(reason);
