import type { RequestHandler } from 'express';
import {
  MemoryStore,
  rateLimit,
  type ClientRateLimitInfo,
  type Options,
  type Store,
} from 'express-rate-limit';
import type { Logger } from '@pipeline/logger';
import type { RedisClient } from '@pipeline/redis';
import type { ApiKeyAuthenticator } from './api-key-authenticator';
import { rateLimited } from '../http/api-errors';

export interface ApiRateLimitOptions {
  /** API_RATE_LIMIT_ENABLED */
  enabled: boolean;
  /** API_RATE_LIMIT_PER_MINUTE: requests one API key may make per minute. */
  perMinute: number;
  /** The counter store shared by every instance (REDIS_URL); null: each instance counts alone. */
  redis: RedisClient | null;
}

/** The paths counted: the management API and the agent tool interface, both API-key surfaces. */
export const RATE_LIMITED_PATHS = ['/api/v1', '/mcp'];

const WINDOW_MS = 60_000;

// INCR and the expiry in one step, so a counter can never be left without one (a crash between
// the two would otherwise lock the key out for good). A fixed window, like MemoryStore's.
const INCREMENT = `
local hits = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {hits, ttl}`;

/**
 * Counts in Redis so every instance shares one budget per key. While Redis does not answer
 * (the client fails fast, without an offline queue) it counts in this instance's memory: the
 * limit then holds per instance instead of failing open or refusing the API.
 */
export class RedisCounterStore implements Store {
  readonly localKeys = false;
  private readonly fallback = new MemoryStore();
  private windowMs = WINDOW_MS;
  private degraded = false;

  constructor(
    private readonly redis: RedisClient,
    private readonly logger: Logger,
    /** Each limit counts under its own prefix (the API's requests, an account's connection tests). */
    readonly prefix = 'api-rate-limit:',
  ) {}

  init(options: Options): void {
    this.windowMs = options.windowMs;
    this.fallback.init(options);
  }

  async increment(key: string): Promise<ClientRateLimitInfo> {
    try {
      const reply = (await this.redis.eval(INCREMENT, 1, this.prefix + key, this.windowMs)) as [
        number,
        number,
      ];
      this.recovered();
      const [totalHits, ttl] = reply;
      return { totalHits, resetTime: new Date(Date.now() + ttl) };
    } catch (error) {
      this.failed(error);
      return this.fallback.increment(key);
    }
  }

  async decrement(key: string): Promise<void> {
    try {
      await this.redis.decr(this.prefix + key);
    } catch (error) {
      this.failed(error);
      await this.fallback.decrement(key);
    }
  }

  async resetKey(key: string): Promise<void> {
    await this.fallback.resetKey(key);
    try {
      await this.redis.del(this.prefix + key);
    } catch (error) {
      this.failed(error);
    }
  }

  shutdown(): void {
    this.fallback.shutdown();
  }

  private failed(error: unknown): void {
    if (this.degraded) return;
    this.degraded = true;
    this.logger.warn('API rate limit: redis not answering, counting in this instance until it is back', {
      error: error instanceof Error ? error.message : String(error),
    });
  }

  private recovered(): void {
    if (!this.degraded) return;
    this.degraded = false;
    this.logger.info('API rate limit: counting in redis again');
  }
}

/**
 * The per-API-key request limit. Requests without a valid key are not counted: they end in 401
 * anyway, and behind the Ingress (`trust proxy` off) every client has the same address, so a
 * per-address budget would be one budget any anonymous client could spend for all.
 */
export function apiRateLimit(
  authenticator: ApiKeyAuthenticator,
  options: ApiRateLimitOptions,
  logger: Logger,
): RequestHandler {
  return rateLimit({
    windowMs: WINDOW_MS,
    limit: options.perMinute,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    store: options.redis ? new RedisCounterStore(options.redis, logger) : new MemoryStore(),
    skip: async (request) => (await authenticator.identify(request)) === null,
    keyGenerator: async (request) => `api-key:${(await authenticator.identify(request))?.id ?? ''}`,
    handler: (_request, response, next) => {
      const retryAfter = String(response.getHeader('Retry-After') ?? '');
      next(
        rateLimited(
          `This API key made more than ${options.perMinute} requests in a minute; retry in ${retryAfter} s`,
        ),
      );
    },
    logger: {
      error: (error, message) => logger.error(message ?? 'API rate limit error', { error }),
      warn: (error, message) => logger.warn(message ?? 'API rate limit warning', { error }),
    },
  });
}
