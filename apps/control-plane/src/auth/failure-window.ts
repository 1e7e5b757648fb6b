import { addressLimitKey } from '@pipeline/tenancy';

/** Failed API-key (and operator-token) attempts are counted in fixed windows of one minute. */
export const FAILURE_WINDOW_MS = 60_000;

/** What a failure counter counts: its keys' prefix (one count per scope) and its name in logs. */
export interface FailureScope {
  keyPrefix: string;
  name: string;
}
export const API_KEY_FAILURES: FailureScope = {
  keyPrefix: 'api-key-failures:',
  name: 'API key failure limit',
};
/** Failed operator logins: counted apart, so tenants' mistyped keys never lock the operator out. */
export const OPERATOR_TOKEN_FAILURES: FailureScope = {
  keyPrefix: 'operator-token-failures:',
  name: 'operator token failure limit',
};

/** The number of the window `now` falls in. */
export const failureWindowOf = (now: number): number => Math.floor(now / FAILURE_WINDOW_MS);

/** The counter of an address in a window; an IPv6 client counts by its /64 (addressLimitKey). */
export const failureKeyOf = (
  address: string,
  window: number,
  scope: FailureScope = API_KEY_FAILURES,
): string => `${scope.keyPrefix}${addressLimitKey(address)}:${window}`;

/** Whole seconds from `now` until its window ends (at least 1). */
export function secondsLeftInWindow(now: number): number {
  return Math.max(1, Math.ceil(((failureWindowOf(now) + 1) * FAILURE_WINDOW_MS - now) / 1000));
}

/** Counts in this instance's memory, one window at a time: never more than a minute of addresses. */
export class LocalFailureCounts {
  private window: number | undefined;
  private counts = new Map<string, number>();

  count(window: number, key: string): number {
    return this.of(window).get(key) ?? 0;
  }

  add(window: number, key: string): void {
    const counts = this.of(window);
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }

  private of(window: number): Map<string, number> {
    if (window !== this.window) {
      this.window = window;
      this.counts = new Map();
    }
    return this.counts;
  }
}
