import { MemoryStore, type Options, type Store } from 'express-rate-limit';
import { AppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import type { RedisClient } from '@pipeline/redis';
import { RedisCounterStore } from '../auth/api-rate-limit';

/** APP_CONNECTION_TESTS_PER_MINUTE's default. */
export const DEFAULT_CONNECTION_TESTS_PER_MINUTE = 10;

const WINDOW_MS = 60_000;

export interface ConnectionAttemptLimitOptions {
  /** APP_CONNECTION_TESTS_PER_MINUTE: connections one account's requests may open per minute. */
  perMinute: number;
  /** The counter store every instance shares (REDIS_URL); null: each instance counts alone. */
  redis: RedisClient | null;
  logger: Logger;
}

/** The 429 of an account past its connection tests for the minute. */
export const connectionTestsRateLimited = (perMinute: number, retryAfterSeconds: number) =>
  new AppError(
    429,
    'connection_tests_rate_limited',
    `This account asked for more than ${perMinute} connection tests in a minute; retry in ${retryAfterSeconds} s`,
    { retryAfterSeconds },
  );

/**
 * Bounds the connections an account's requests make to a host it names: a connection test, and
 * a save that tests a warehouse's new connection or password. Each answers a distinct code
 * (refused, TLS, login, database), so without a bound an account could guess a third party's
 * password or scan its ports from the service's addresses at the API's request rate. Counted
 * per account, in fixed windows of a minute, in Redis (shared by every instance; in this
 * instance's memory while Redis does not answer), as the API's request limit counts.
 */
export class ConnectionAttemptLimit {
  private readonly store: Store;

  constructor(private readonly options: ConnectionAttemptLimitOptions) {
    this.store = options.redis
      ? new RedisCounterStore(options.redis, options.logger, 'connection-tests:')
      : new MemoryStore();
    // Both stores read the window length only.
    void this.store.init?.({ windowMs: WINDOW_MS } as Options);
  }

  /** Counts one connection for the account; throws 429 `connection_tests_rate_limited` past the limit. */
  async take(accountId: string): Promise<void> {
    const { totalHits, resetTime } = await this.store.increment(`account:${accountId}`);
    if (totalHits <= this.options.perMinute) return;
    const resetsAt = resetTime?.getTime() ?? Date.now() + WINDOW_MS;
    throw connectionTestsRateLimited(
      this.options.perMinute,
      Math.max(1, Math.ceil((resetsAt - Date.now()) / 1000)),
    );
  }
}
