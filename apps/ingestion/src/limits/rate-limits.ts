import type { Logger } from '@pipeline/logger';
import type { RedisClient } from '@pipeline/redis';
import {
  ALLOWED,
  AUTH_ATTEMPTS_DENIED,
  authAttemptDecision,
  authAttemptWindow,
  effectiveLimits,
  LocalWindows,
  sharedTakeDecision,
  sharedWindowKeys,
  type LimitDecision,
  type SharedDecision,
  type SharedLimits,
} from './limit-windows';
import { SharedStoreBatch } from './shared-store-batch';

export { LocalBackstop, type LimitDecision, type SharedDecision, type SharedLimits } from './limit-windows';

/**
 * Per write key across all instances, in the shared counter store (defaults 100/s and
 * 100,000/day, overridable per key). Applied only with a store; while the store is down
 * requests pass (the local backstop still holds) and it is logged.
 */
export class SharedRateLimiter {
  private lastWarning = 0;
  private readonly store: SharedStoreBatch | null;

  constructor(
    redis: RedisClient | null,
    private readonly defaults: SharedLimits,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.store = redis ? SharedStoreBatch.for(redis) : null;
  }

  /**
   * Counts `events` against the key's windows. `alsoCheckExists` (a key of the same store, e.g.
   * the batch's dedupe key) is looked up in the same round trip: /collect makes one round trip
   * to the store before it publishes.
   */
  async take(
    writeKeyId: string,
    events: number,
    overrides?: Partial<SharedLimits>,
    alsoCheckExists?: string,
  ): Promise<SharedDecision> {
    if (!this.store) return ALLOWED;
    const nowMs = this.now();
    const limits = effectiveLimits(this.defaults, overrides);
    const [second, day] = sharedWindowKeys(writeKeyId, nowMs);
    try {
      const result = await this.store.take({
        second,
        day,
        events,
        perSecond: limits.eventsPerSecond,
        perDay: limits.eventsPerDay,
        ...(alsoCheckExists === undefined ? {} : { exists: alsoCheckExists }),
      });
      return sharedTakeDecision(result, nowMs, alsoCheckExists !== undefined);
    } catch (error) {
      if (nowMs - this.lastWarning > 10_000) {
        this.lastWarning = nowMs;
        this.logger.warn('shared rate limit store unavailable; only the local backstop applies', {
          error: (error as Error).message,
        });
      }
      return ALLOWED;
    }
  }
}

/**
 * Write-key checks per client IP, counting only keys not in the valid-key cache
 * (AUTH_RESOLUTION_ATTEMPTS_PER_MINUTE). An IPv6 client counts by its /64 (addressLimitKey):
 * one subscriber's 2^64 addresses share one budget. Shared through Redis when there is one;
 * per instance otherwise, or while it is down.
 */
export class AuthAttemptLimiter {
  private readonly local = new LocalWindows();

  constructor(
    private readonly redis: RedisClient | null,
    private readonly perMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  async take(address: string): Promise<LimitDecision> {
    const { ip, minute, key } = authAttemptWindow(address, this.now());
    if (this.redis) {
      try {
        const [[, count]] = (await this.redis.multi().incr(key).expire(key, 60).exec()) as [[null, number]];
        return authAttemptDecision(count, this.perMinute);
      } catch {
        // Fall through to the per-instance count.
      }
    }
    return this.local.take(ip, 1, this.perMinute, minute) ? ALLOWED : AUTH_ATTEMPTS_DENIED;
  }
}
