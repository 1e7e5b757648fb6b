import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from './redis-client';
import { DEBUG_PAYLOAD_MAX_BYTES, debugPayload, DebugStreamWriter } from './debug-streams';

const logger = createLogger({ service: 'debug-streams-test', stream: new PassThrough() });

describe('DebugStreamWriter (real Redis)', () => {
  let redis: RedisClient;
  const keys: string[] = [];
  beforeAll(async () => {
    redis = createRedis({ REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' }, { logger });
    await redis.connect();
  });
  afterAll(async () => {
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const until = async (check: () => Promise<boolean>) => {
    const deadline = Date.now() + 3000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it('caps the stream, sets the TTL at most once a minute, and samples per key and second', async () => {
    let now = 1_000_000;
    const writer = new DebugStreamWriter(
      redis,
      { maxLen: 10, ttlSeconds: 600, maxPerSecond: 300 },
      logger,
      () => now,
    );
    const key = `test:debug:${randomUUID()}`;
    keys.push(key);
    expect(writer.admit(key, 250)).toBe(250);
    expect(writer.admit(key, 70)).toBe(50);
    expect(writer.stats.sampledOut).toBe(20);
    for (let i = 0; i < 300; i++) writer.add(key, ['d', String(i)]);
    await until(async () => writer.stats.recorded === 300);
    // MAXLEN ~ trims whole macro nodes (100 entries by default): about the cap, not all 300.
    expect(await redis.xlen(key)).toBeLessThanOrEqual(10 + 100);
    const newest = (await redis.xrevrange(key, '+', '-', 'COUNT', 1)) as [string, string[]][];
    expect(newest[0]?.[1]).toEqual(['d', '299']);
    expect(await redis.ttl(key)).toBeGreaterThan(590);

    // Within the minute the TTL is not refreshed; after it, it is.
    await redis.expire(key, 100);
    now += 1000;
    expect(writer.admit(key, 1)).toBe(1);
    writer.add(key, ['d', 'a']);
    await until(async () => writer.stats.recorded === 301);
    expect(await redis.ttl(key)).toBeLessThanOrEqual(100);
    now += 60_000;
    writer.add(key, ['d', 'b']);
    await until(async () => writer.stats.recorded === 302);
    expect(await redis.ttl(key)).toBeGreaterThan(590);
  });

  it('drops and counts entries while Redis is not ready, without queueing them', () => {
    const down = createRedis({ REDIS_URL: 'redis://127.0.0.1:1' }, { logger });
    const writer = new DebugStreamWriter(down, { maxLen: 10, ttlSeconds: 60, maxPerSecond: 10 }, logger);
    expect(writer.available).toBe(false);
    writer.add('k', ['d', '1']);
    expect(writer.stats).toEqual({ recorded: 0, sampledOut: 0, failed: 1 });
    down.disconnect();
  });
});

describe('debugPayload', () => {
  it('keeps a payload up to 16 KB and cuts a larger one to its top-level scalars', () => {
    const small = { type: 'track', properties: { a: 1 } };
    expect(debugPayload(small)).toEqual({ payload: small, truncated: false });
    const big = {
      type: 'track',
      event: 'E',
      count: 3,
      properties: { text: 'é'.repeat(DEBUG_PAYLOAD_MAX_BYTES) },
    };
    const { payload, truncated } = debugPayload(big);
    expect(truncated).toBe(true);
    expect(payload).toMatchObject({ type: 'track', event: 'E', count: 3, truncated: true });
    expect(payload.properties).toBeUndefined();
    expect(payload.bytes).toBe(Buffer.byteLength(JSON.stringify(big)));
    expect(String(payload.preview)).toHaveLength(1024);
    expect(debugPayload(42)).toEqual({ payload: { value: 42 }, truncated: false });
  });
});
