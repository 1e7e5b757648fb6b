import type { Logger } from '@pipeline/logger';
import type { RedisClient } from '@pipeline/redis';
import {
  DAY_WINDOW_TTL_SECONDS,
  INGESTION_KEY_PREFIX,
  SECOND_WINDOW_TTL_SECONDS,
  writeKeyWindowKeys,
} from '@pipeline/tenancy';

/** Replays are counted per account in fixed windows of a minute. */
export const REPLAY_WINDOW_MS = 60_000;

export type ReplayDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

/** The counter of an account's replays in the window `nowMs` falls in, and the seconds left in it. */
export function replayWindowOf(accountId: string, nowMs: number): { key: string; secondsLeft: number } {
  const window = Math.floor(nowMs / REPLAY_WINDOW_MS);
  return {
    key: `dead-letter-replays:${accountId}:${window}`,
    secondsLeft: Math.max(1, Math.ceil(((window + 1) * REPLAY_WINDOW_MS - nowMs) / 1000)),
  };
}

/**
 * DEAD_LETTER_REPLAYS_PER_MINUTE per account, across instances in the control plane's Redis
 * (`control-plane:dead-letter-replays:…`); per instance without Redis or while it is down. A
 * replay re-sends up to 1000 records, each retried up to DELIVERY_MAX_ATTEMPTS times through the
 * kind's shared retry topic: without a bound one account could keep that topic full.
 */
export class AccountReplayLimiter {
  private localWindow = '';
  private local = new Map<string, number>();
  private lastWarning = 0;

  constructor(
    readonly perMinute: number,
    private readonly redis: RedisClient | null = null,
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async take(accountId: string): Promise<ReplayDecision> {
    const nowMs = this.now();
    const { key, secondsLeft } = replayWindowOf(accountId, nowMs);
    const count = (await this.sharedCount(key)) ?? this.localCount(key);
    return count > this.perMinute ? { allowed: false, retryAfterSeconds: secondsLeft } : { allowed: true };
  }

  private async sharedCount(key: string): Promise<number | undefined> {
    if (!this.redis) return undefined;
    try {
      const [[, count]] = (await this.redis.multi().incr(key).pexpire(key, REPLAY_WINDOW_MS).exec()) as [
        [null, number],
      ];
      return count;
    } catch (error) {
      const nowMs = this.now();
      if (nowMs - this.lastWarning > 10_000) {
        this.lastWarning = nowMs;
        this.logger?.warn('dead-letter replay limit store unavailable; counting per instance', {
          error: (error as Error).message,
        });
      }
      return undefined;
    }
  }

  private localCount(key: string): number {
    const window = key.slice(key.lastIndexOf(':') + 1);
    if (window !== this.localWindow) {
      this.localWindow = window;
      this.local = new Map();
    }
    const count = (this.local.get(key) ?? 0) + 1;
    this.local.set(key, count);
    return count;
  }
}

/**
 * Adds replayed events to their write keys' second and day counters, the ones ingestion's
 * limits count /collect in: a replay uses the key's budget as if its events came in again, so
 * ingestion refuses that key's new events sooner, never the other way round. Counting, not
 * refusing: the control plane does not know ingestion's default limits, and the letters are
 * already sent when they are counted. The client is the shared store without a key prefix.
 */
export class WriteKeyEventCounter {
  private lastWarning = 0;

  constructor(
    private readonly redis: RedisClient,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  async count(eventsByWriteKey: ReadonlyMap<string, number>): Promise<void> {
    const nowMs = this.now();
    for (const [writeKeyId, events] of eventsByWriteKey) {
      if (events <= 0) continue;
      const [secondWindow, dayWindow] = writeKeyWindowKeys(writeKeyId, nowMs);
      const second = INGESTION_KEY_PREFIX + secondWindow;
      const day = INGESTION_KEY_PREFIX + dayWindow;
      try {
        // One slot (the write key's hash tag), so one transaction in a cluster too.
        await this.redis
          .multi()
          .incrby(second, events)
          .expire(second, SECOND_WINDOW_TTL_SECONDS)
          .incrby(day, events)
          .expire(day, DAY_WINDOW_TTL_SECONDS)
          .exec();
      } catch (error) {
        if (nowMs - this.lastWarning > 10_000) {
          this.lastWarning = nowMs;
          this.logger.warn('replayed events not counted against their write key: the store is unavailable', {
            error: (error as Error).message,
          });
        }
      }
    }
  }
}
