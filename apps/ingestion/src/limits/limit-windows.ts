import { addressLimitKey, writeKeyWindowKeys } from '@pipeline/tenancy';

export { writeKeyHashTag } from '@pipeline/tenancy';
import type { LimitType } from '../collect/ingestion-errors';

// The arithmetic of the write-key limits, apart from the stores that count: which window a
// moment falls in, the counter keys of a window, and what a count or a store's answer means.
// A mistake here lets one key take another's budget or keeps a client out longer than it must.

export type LimitDecision = { allowed: true } | { allowed: false; limitType: LimitType; retryAfter: number };

export const ALLOWED: LimitDecision = { allowed: true };

/**
 * A shared decision and, when asked, whether the key checked alongside exists; `exists` is
 * undefined when it was not asked or the store could not answer.
 */
export type SharedDecision = LimitDecision & { exists?: boolean };

export interface SharedLimits {
  eventsPerSecond: number;
  eventsPerDay: number;
}

/** A fixed-window counter per key in this process's memory. */
export class LocalWindows {
  // Stryker disable next-line UnaryOperator: equivalent, the counts start empty whatever window comes first
  private window = -1;
  private counts = new Map<string, number>();

  take(key: string, amount: number, limit: number, window: number): boolean {
    if (window !== this.window) {
      this.window = window;
      this.counts = new Map();
    }
    const used = this.counts.get(key) ?? 0;
    if (used + amount > limit) return false;
    this.counts.set(key, used + amount);
    return true;
  }
}

/** Per write key per server instance (RATE_LIMIT_LOCAL_BACKSTOP_EPS); holds without Redis. */
export class LocalBackstop {
  private readonly windows = new LocalWindows();

  constructor(
    private readonly eventsPerSecond: number,
    private readonly now: () => number = Date.now,
  ) {}

  take(writeKeyId: string, events: number): LimitDecision {
    const second = Math.floor(this.now() / 1000);
    return this.windows.take(writeKeyId, events, this.eventsPerSecond, second)
      ? ALLOWED
      : { allowed: false, limitType: 'second', retryAfter: 1 };
  }
}

/** A key's limits: its own overrides where it has them, the defaults otherwise. */
export function effectiveLimits(defaults: SharedLimits, overrides?: Partial<SharedLimits>): SharedLimits {
  return { ...defaults, ...overrides };
}

/** The shared counters of a write key at `nowMs` (@pipeline/tenancy, shared with the control plane's replays). */
export const sharedWindowKeys = writeKeyWindowKeys;

/** Whole seconds until the next UTC midnight, when the day's count starts again; at least 1. */
export function secondsUntilUtcMidnight(nowMs: number): number {
  const now = new Date(nowMs);
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((midnight - nowMs) / 1000));
}

/**
 * What the shared take script's answer means: 0 allowed, 1 over the second, 2 over the day, 3
 * allowed and the key checked alongside exists. `checkedExists` says whether a key was checked.
 */
export function sharedTakeDecision(result: number, nowMs: number, checkedExists: boolean): SharedDecision {
  if (result === 3) return { allowed: true, exists: true };
  if (result === 1) return { allowed: false, limitType: 'second', retryAfter: 1 };
  if (result === 2) return { allowed: false, limitType: 'day', retryAfter: secondsUntilUtcMidnight(nowMs) };
  return checkedExists ? { allowed: true, exists: false } : ALLOWED;
}

/** The refusal of a client over its write-key checks for the minute. */
export const AUTH_ATTEMPTS_DENIED: LimitDecision = {
  allowed: false,
  limitType: 'auth_resolution',
  retryAfter: 60,
};

/**
 * The window of a client's write-key checks at `nowMs`: whom it counts (an IPv6 client by its
 * /64), its minute, and the shared counter's key.
 */
export function authAttemptWindow(
  address: string,
  nowMs: number,
): { ip: string; minute: number; key: string } {
  const ip = addressLimitKey(address);
  const minute = Math.floor(nowMs / 60_000);
  return { ip, minute, key: `rl:auth:${ip}:${minute}` };
}

/** The decision for a client's `count`-th write-key check of its minute. */
export function authAttemptDecision(count: number, perMinute: number): LimitDecision {
  return count > perMinute ? AUTH_ATTEMPTS_DENIED : ALLOWED;
}
