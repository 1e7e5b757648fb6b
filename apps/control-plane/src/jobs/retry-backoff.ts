export interface RetryBackoff {
  retryBaseMs: number;
  retryMaxMs: number;
}

/**
 * The wait before retry number `attempt` (1-based) of a failed sync job: base, 2 × base,
 * 4 × base … never more than the maximum. An attempt below 1 waits the base.
 */
export function retryDelayMs(attempt: number, { retryBaseMs, retryMaxMs }: RetryBackoff): number {
  return Math.min(retryMaxMs, retryBaseMs * 2 ** Math.max(0, attempt - 1));
}
