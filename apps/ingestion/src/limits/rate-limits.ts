import type { Logger } from '@pipeline/logger';
import type { Redis } from '@pipeline/redis';
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

export { LocalBackstop, type LimitDecision, type SharedDecision, type SharedLimits } from './limit-windows';

// Checks both windows, then counts the events in both, atomically: a rejected batch is not
// counted against the day. With a third key (the batch's dedupe key), also answers whether it
// exists, in the same round trip: 0 allowed, 1 over the second, 2 over the day, 3 allowed and
// the key exists.
const SHARED_TAKE = `
local n = tonumber(ARGV[1])
local second = tonumber(redis.call('GET', KEYS[1]) or '0')
if second + n > tonumber(ARGV[2]) then return 1 end
local day = tonumber(redis.call('GET', KEYS[2]) or '0')
if day + n > tonumber(ARGV[3]) then return 2 end
redis.call('INCRBY', KEYS[1], n)
redis.call('EXPIRE', KEYS[1], 2)
redis.call('INCRBY', KEYS[2], n)
redis.call('EXPIRE', KEYS[2], 90000)
if KEYS[3] and redis.call('EXISTS', KEYS[3]) == 1 then return 3 end
return 0`;

/** Called as (numberOfKeys, ...keys, ...args): the dedupe key is optional. */
type SharedTakeCommand = (numberOfKeys: 2 | 3, ...keysThenArgs: (string | number)[]) => Promise<number>;

/**
 * Per write key across all instances, in the shared counter store (defaults 100/s and
 * 100,000/day, overridable per key). Applied only with a store; while the store is down
 * requests pass (the local backstop still holds) and it is logged.
 */
export class SharedRateLimiter {
  private lastWarning = 0;
  private readonly sharedTake: SharedTakeCommand | null;

  constructor(
    redis: Redis | null,
    private readonly defaults: SharedLimits,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    // A defined command is sent by its SHA (EVALSHA), not as the whole script on every request;
    // without numberOfKeys it is given on each call (2, or 3 with a dedupe key).
    redis?.defineCommand('ingestionSharedTake', { lua: SHARED_TAKE });
    this.sharedTake = redis
      ? (redis as unknown as Record<'ingestionSharedTake', SharedTakeCommand>).ingestionSharedTake.bind(redis)
      : null;
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
    if (!this.sharedTake) return ALLOWED;
    const nowMs = this.now();
    const limits = effectiveLimits(this.defaults, overrides);
    const keys: string[] = sharedWindowKeys(writeKeyId, nowMs);
    if (alsoCheckExists !== undefined) keys.push(alsoCheckExists);
    try {
      const result = await this.sharedTake(
        keys.length as 2 | 3,
        ...keys,
        events,
        limits.eventsPerSecond,
        limits.eventsPerDay,
      );
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
    private readonly redis: Redis | null,
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
