import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, redisConfigSchema } from './index';

// Runs against the real Redis server (127.0.0.1:6379 or REDIS_URL).
const logger = createLogger({ service: 'redis-test', stream: new PassThrough() });
const config = loadConfig(redisConfigSchema, process.env);

describe('Redis (real server)', () => {
  it('connects and counts atomically under a key prefix', async () => {
    const prefix = `test:${randomUUID()}:`;
    const redis = createRedis(config, { logger, keyPrefix: prefix });
    await redis.connect();
    expect(await redis.ping()).toBe('PONG');
    const counts = await Promise.all(Array.from({ length: 20 }, () => redis.incr('counter')));
    expect(counts.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    await redis.pexpire('counter', 1000);
    expect(await redis.pttl('counter')).toBeGreaterThan(0);
    await redis.del('counter');
    await closeRedis(redis);
  });

  it('fails fast instead of queueing when the server is unreachable', async () => {
    const redis = createRedis(loadConfig(redisConfigSchema, { REDIS_URL: 'redis://127.0.0.1:1' }), {
      logger,
    });
    // A queued command would never settle while the server is gone: rejecting at all is the point.
    await expect(redis.connect()).rejects.toThrow();
    await expect(redis.incr('x')).rejects.toThrow();
    await closeRedis(redis);
  });
});
