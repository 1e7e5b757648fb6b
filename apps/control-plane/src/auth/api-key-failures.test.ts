import { randomInt } from 'node:crypto';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from '@pipeline/redis';
import { clientAddressResolver } from '@pipeline/tenancy';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { ApiKeyFailureCounter } from './api-key-failures';

const LIMIT = 10;
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const hex = () => randomInt(0x10000).toString(16);
/** A fresh /64 per call: the counters live in the shared Redis for a minute. */
const freshPrefix = () => `2001:db8:${hex()}:${hex()}`;

describe('failed API-key attempts per client address (real PostgreSQL and Redis)', () => {
  let h: Harness;
  let t: Tenant;
  let redis: RedisClient;
  const frozenAt = Date.now();

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger: createLogger({ service: 't', stream: new PassThrough() }) });
    await redis.connect();
    h = await startHarness('api key failures', {
      // The test's requests come from loopback, a trusted proxy here: X-Forwarded-For names the client.
      // The clock stands still: 200 requests on a busy machine may otherwise straddle a minute.
      apiKeyFailures: {
        perMinute: LIMIT,
        redis,
        clientAddress: clientAddressResolver(['loopback']),
        now: () => frozenAt,
      },
    });
    t = await h.tenant();
  });
  afterAll(async () => {
    await h.close();
    redis.disconnect();
  });

  const from = (address: string, key?: string) => {
    const test = request(h.app).get('/api/v1/write-keys').set('X-Forwarded-For', address);
    return key === undefined ? test : test.set('Authorization', `Bearer ${key}`);
  };

  it('throttles 200 guesses from 200 addresses of one /64 after the first 10, a valid key included', async () => {
    const prefix = freshPrefix();
    const answers: { status: number; code: string }[] = [];
    for (let i = 0; i < 200; i += 1) {
      const response = await from(`${prefix}:${hex()}:${hex()}:${hex()}:${i.toString(16)}`, `plk_guess_${i}`);
      answers.push({ status: response.status, code: response.body.code });
      if (response.status === 429) {
        const retryAfter = Number(response.headers['retry-after']);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(60);
      }
    }
    expect(answers.slice(0, LIMIT)).toEqual(Array(LIMIT).fill({ status: 401, code: 'invalid_api_key' }));
    expect(answers.slice(LIMIT)).toEqual(
      Array(200 - LIMIT).fill({ status: 429, code: 'too_many_failed_attempts' }),
    );
    // A valid key from the same /64 waits too: otherwise the one right guess would stand out.
    const valid = await from(`${prefix}::1`, t.key);
    expect([valid.status, valid.body.code]).toEqual([429, 'too_many_failed_attempts']);
    // Another /64, even next door, is not affected.
    const [, , g3 = '0', g4 = '0'] = prefix.split(':');
    const neighbour = `2001:db8:${g3}:${(parseInt(g4, 16) ^ 1).toString(16)}::1`;
    expect((await from(neighbour, t.key)).status).toBe(200);
    expect((await from(neighbour, 'plk_guess_x')).body.code).toBe('invalid_api_key');
  });

  it('counts an IPv4-mapped client as its IPv4 address', async () => {
    const v4 = `198.51.${randomInt(256)}.${randomInt(256)}`;
    for (let i = 0; i < LIMIT; i += 1) {
      const response = await from(i % 2 === 0 ? v4 : `::ffff:${v4}`, `plk_guess_${i}`);
      expect(response.status).toBe(401);
    }
    expect((await from(v4, 'plk_guess_last')).status).toBe(429);
    expect((await from(`::ffff:${v4}`, t.key)).status).toBe(429);
  });

  it('does not count requests without a key, nor valid keys', async () => {
    const address = `${freshPrefix()}::5`;
    for (let i = 0; i < LIMIT + 5; i += 1) {
      const anonymous = await from(address);
      expect([anonymous.status, anonymous.body.code]).toEqual([401, 'unauthenticated']);
      expect((await from(address, t.key)).status).toBe(200);
    }
    expect((await from(address, 'plk_guess')).body.code).toBe('invalid_api_key');
  });
});

describe('ApiKeyFailureCounter without Redis', () => {
  it('counts per address and minute in memory, and says how long the minute has left', async () => {
    let now = Date.UTC(2026, 2, 1, 12, 0, 15, 500);
    const counter = new ApiKeyFailureCounter(
      null,
      createLogger({ service: 't', stream: new PassThrough() }),
      () => now,
    );
    await counter.fail('2001:db8:1:2::1');
    await counter.fail('2001:db8:1:2::2');
    await counter.fail('203.0.113.1');
    expect(await counter.failures('2001:db8:1:2:ffff::')).toBe(2);
    expect(await counter.failures('::ffff:203.0.113.1')).toBe(1);
    expect(await counter.failures('2001:db8:1:3::1')).toBe(0);
    expect(counter.retryAfter()).toBe(45);
    now = Date.UTC(2026, 2, 1, 12, 0, 59, 999);
    expect(counter.retryAfter()).toBe(1);
    now = Date.UTC(2026, 2, 1, 12, 1, 0, 0);
    expect(await counter.failures('2001:db8:1:2::1')).toBe(0);
    expect(counter.retryAfter()).toBe(60);
  });
});
