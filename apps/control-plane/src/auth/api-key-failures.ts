import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { AppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import type { RedisClient } from '@pipeline/redis';
import type { ApiKeyAuthenticator } from './api-key-authenticator';
import { presentsKey } from './bearer-token';
import {
  API_KEY_FAILURES,
  FAILURE_WINDOW_MS,
  failureKeyOf,
  type FailureScope,
  failureWindowOf,
  LocalFailureCounts,
  secondsLeftInWindow,
} from './failure-window';

export interface ApiKeyFailureLimitOptions {
  /** API_KEY_FAILURES_PER_MINUTE: unknown or revoked keys one client address may present a minute. */
  perMinute: number;
  /** The counters shared by every instance (REDIS_URL); null: each instance counts alone. */
  redis: RedisClient | null;
  /** The client's address (clientAddressResolver over TRUSTED_PROXIES). */
  clientAddress: (request: IncomingMessage) => string | null;
  /** The clock the windows are cut by (Date.now); a test holds it inside one window. */
  now?: () => number;
}

export const tooManyFailedAttempts = (perMinute: number, retryAfter: number) =>
  new AppError(
    429,
    'too_many_failed_attempts',
    `This address presented more than ${perMinute} unknown or revoked API keys in a minute; retry in ${retryAfter} s`,
  );

/**
 * Failed API-key attempts per client address in fixed one-minute windows: in Redis when there is
 * one (INCR and EXPIRE on a key per address and window), in this instance's memory otherwise or
 * while Redis does not answer. An IPv6 client counts by its /64 (addressLimitKey). `scope`
 * keeps another credential's failures (the operator token's) in counts of their own.
 */
export class ApiKeyFailureCounter {
  private readonly local = new LocalFailureCounts();
  private degraded = false;

  constructor(
    private readonly redis: RedisClient | null,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly scope: FailureScope = API_KEY_FAILURES,
  ) {}

  /** Failures of the address in the current window. */
  async failures(address: string): Promise<number> {
    const { key, window } = this.keyOf(address);
    if (this.redis) {
      try {
        const count = Number((await this.redis.get(key)) ?? 0);
        this.recovered();
        return count;
      } catch (error) {
        this.failed(error);
      }
    }
    return this.local.count(window, key);
  }

  async fail(address: string): Promise<void> {
    const { key, window } = this.keyOf(address);
    if (this.redis) {
      try {
        await this.redis.multi().incr(key).pexpire(key, FAILURE_WINDOW_MS).exec();
        this.recovered();
        return;
      } catch (error) {
        this.failed(error);
      }
    }
    this.local.add(window, key);
  }

  /** Whole seconds until the current window ends (at least 1). */
  retryAfter(): number {
    return secondsLeftInWindow(this.now());
  }

  private keyOf(address: string): { key: string; window: number } {
    const window = failureWindowOf(this.now());
    return { key: failureKeyOf(address, window, this.scope), window };
  }

  private failed(error: unknown): void {
    if (this.degraded) return;
    this.degraded = true;
    this.logger.warn(`${this.scope.name}: redis not answering, counting in this instance until it is back`, {
      error: error instanceof Error ? error.message : String(error),
    });
  }

  private recovered(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info(`${this.scope.name}: counting in redis again`);
  }
}

/**
 * Throttles key guessing: once an address has presented `perMinute` unknown or revoked API keys
 * this minute, every request of that address that presents a key is 429
 * `too_many_failed_attempts` with Retry-After until the minute ends, a valid key included:
 * answering a valid key normally would tell a guesser which guess was right. Requests without
 * a key are not counted (they cannot guess). The count and the key lookup run side by side,
 * and the lookup is the one the rate limiter and the route reuse.
 */
export function apiKeyFailureLimit(
  authenticator: ApiKeyAuthenticator,
  options: ApiKeyFailureLimitOptions,
  logger: Logger,
  counter = new ApiKeyFailureCounter(options.redis, logger, options.now),
): RequestHandler {
  return (request, response, next) => {
    if (!presentsKey(request.headers.authorization)) {
      next();
      return;
    }
    const address = options.clientAddress(request) ?? 'unknown';
    Promise.all([counter.failures(address), authenticator.identify(request)])
      .then(async ([failures, key]) => {
        if (failures >= options.perMinute) {
          const retryAfter = counter.retryAfter();
          response.setHeader('Retry-After', String(retryAfter));
          next(tooManyFailedAttempts(options.perMinute, retryAfter));
          return;
        }
        if (!key) await counter.fail(address);
        next();
      })
      .catch(next);
  };
}
