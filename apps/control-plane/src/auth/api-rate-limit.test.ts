import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Express } from 'express';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import { createApp } from '../composition';
import {
  startHarness,
  TEST_CREDENTIAL_KEYS,
  TEST_INTERNAL_TOKEN,
  TEST_INTERNAL_TOKENS,
  type Harness,
} from '../testing/harness';

const LIMIT = 3;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** `"3-in-1min"; r=2; t=60` (RateLimit header, draft-8) as numbers. */
function rateLimitOf(response: request.Response): { name: string; remaining: number; reset: number } {
  const match = /^"([^"]+)"; r=(\d+); t=(\d+)$/.exec(String(response.headers.ratelimit));
  if (!match) throw new Error(`no RateLimit header: ${String(response.headers.ratelimit)}`);
  return { name: match[1] ?? '', remaining: Number(match[2]), reset: Number(match[3]) };
}

const get = (app: Express, path: string, key: string) =>
  request(app).get(path).set('Authorization', `Bearer ${key}`);

describe('management API rate limit per API key (real PostgreSQL and Redis)', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness('api rate limit', {
      apiRateLimit: { enabled: true, perMinute: LIMIT, redis: null },
    });
  });
  afterAll(() => h.close());

  /** Spends a fresh key's whole budget and returns the refused request. */
  async function exhaust(app: Express, key: string): Promise<request.Response> {
    for (let i = 1; i <= LIMIT; i += 1) {
      const response = await get(app, '/api/v1/write-keys', key);
      expect({ status: response.status, remaining: rateLimitOf(response).remaining }).toEqual({
        status: 200,
        remaining: LIMIT - i,
      });
    }
    return get(app, '/api/v1/write-keys', key);
  }

  it('answers the N+1st request of a minute 429 rate_limited with Retry-After and RateLimit headers', async () => {
    const t = await h.tenant();
    const refused = await exhaust(h.app, t.key);
    expect(refused.status).toBe(429);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toEqual({
      type: 'urn:pipeline:problem:rate_limited',
      title: 'Too Many Requests',
      status: 429,
      code: 'rate_limited',
      detail: expect.stringMatching(/more than 3 requests in a minute/),
      requestId: expect.any(String),
    });
    const retryAfter = Number(refused.headers['retry-after']);
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const header = rateLimitOf(refused);
    expect(header.name).toBe('3-in-1min');
    expect(header.remaining).toBe(0);
    // Both are read from the same reset time a few microseconds apart.
    expect(Math.abs(header.reset - retryAfter)).toBeLessThanOrEqual(1);
    expect(refused.headers['ratelimit-policy']).toMatch(/^"3-in-1min"; q=3; w=60; pk=:[A-Za-z0-9+/=]+:$/);
  });

  it('counts each key alone: another key, even of the same account, is unaffected', async () => {
    const t = await h.tenant();
    expect((await exhaust(h.app, t.key)).status).toBe(429);
    const sibling = await t.keyWith(['write_keys.read']);
    const other = await h.tenant();
    for (const key of [sibling, other.key]) {
      const response = await get(h.app, '/api/v1/write-keys', key);
      expect(response.status).toBe(200);
      expect(rateLimitOf(response).remaining).toBe(LIMIT - 1);
    }
    expect((await get(h.app, '/api/v1/write-keys', t.key)).status).toBe(429);
  });

  it('counts every route of the key, the MCP endpoint included', async () => {
    const t = await h.tenant(['automations']);
    expect((await exhaust(h.app, t.key)).status).toBe(429);
    expect((await get(h.app, '/api/v1/apps', t.key)).status).toBe(429);
    const mcp = await request(h.app)
      .post('/mcp')
      .set('Authorization', `Bearer ${t.key}`)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    expect(mcp.status).toBe(429);
  });

  it('leaves health, the documents, the internal endpoints and requests without a valid key alone', async () => {
    const t = await h.tenant();
    expect((await exhaust(h.app, t.key)).status).toBe(429);
    for (const path of ['/health', '/api/v1/openapi.json', '/docs/']) {
      const response = await get(h.app, path, t.key);
      expect({ path, status: response.status, limited: 'ratelimit' in response.headers }).toEqual({
        path,
        status: 200,
        limited: false,
      });
    }
    for (let i = 0; i <= LIMIT; i += 1) {
      const resolve = await request(h.app)
        .post('/internal/v1/write-keys/resolve')
        .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
        .send({ writeKey: 'wk_unknown' });
      expect(resolve.status).toBe(404);
      const anonymous = await request(h.app).get('/api/v1/write-keys');
      expect(anonymous.status).toBe(401);
      const invalid = await get(h.app, '/api/v1/write-keys', 'pk_not_a_key');
      expect({ status: invalid.status, limited: 'ratelimit' in invalid.headers }).toEqual({
        status: 401,
        limited: false,
      });
    }
  });

  it('documents the 429 and its headers on every operation of the management API', async () => {
    const doc = (await request(h.app).get('/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { responses: Record<string, { headers?: object }> }>>;
    };
    // The operator routes answer to the operator's token, not to an API key: no key's limit.
    const operations = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith('/api/v1') && !path.startsWith('/api/v1/operator/'))
      .flatMap(([path, methods]) =>
        Object.entries(methods).map(([method, op]) => ({
          op: `${method} ${path}`,
          op429: op.responses['429'],
        })),
      );
    expect(operations.length).toBeGreaterThan(20);
    for (const { op, op429 } of operations) {
      expect({ op, headers: Object.keys(op429?.headers ?? {}).sort() }).toEqual({
        op,
        headers: ['RateLimit', 'RateLimit-Policy', 'Retry-After'],
      });
    }
  });

  it('is off when disabled', async () => {
    const open = createApp({
      dataSource: h.db.dataSource,
      logger: createLogger({ service: 'test', stream: new PassThrough() }),
      credentialKeys: TEST_CREDENTIAL_KEYS,
      internalTokens: TEST_INTERNAL_TOKENS,
      apiRateLimit: { enabled: false, perMinute: 1, redis: null },
    });
    const t = await h.tenant();
    for (let i = 0; i < 3; i += 1) {
      const response = await get(open, '/api/v1/write-keys', t.key);
      expect({ status: response.status, limited: 'ratelimit' in response.headers }).toEqual({
        status: 200,
        limited: false,
      });
    }
  });

  describe('with Redis', () => {
    const clients: RedisClient[] = [];
    const logLines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logLines.push(chunk.toString('utf8')));
    const logger = createLogger({ service: 'control-plane-test', stream, level: 'debug' });
    afterAll(async () => {
      for (const client of clients) await closeRedis(client);
    });

    /** An instance of the control plane with its own Redis client, as each replica has. */
    async function instance(keyPrefix: string, reachable = true): Promise<Express> {
      const redis = createRedis({ REDIS_URL }, { logger, keyPrefix });
      clients.push(redis);
      // A closed client fails every command at once, as one whose server is away does.
      if (reachable) await redis.connect();
      else redis.disconnect();
      return createApp({
        dataSource: h.db.dataSource,
        logger,
        credentialKeys: TEST_CREDENTIAL_KEYS,
        internalTokens: TEST_INTERNAL_TOKENS,
        apiRateLimit: { enabled: true, perMinute: LIMIT, redis },
      });
    }

    it('shares one budget per key across instances, with an expiry on the counter', async () => {
      const prefix = `cp-test:${randomUUID()}:`;
      const [first, second] = [await instance(prefix), await instance(prefix)];
      if (!first || !second) throw new Error('no instances');
      const t = await h.tenant();
      expect(rateLimitOf(await get(first, '/api/v1/write-keys', t.key)).remaining).toBe(2);
      expect(rateLimitOf(await get(second, '/api/v1/write-keys', t.key)).remaining).toBe(1);
      expect(rateLimitOf(await get(first, '/api/v1/write-keys', t.key)).remaining).toBe(0);
      const refused = await get(second, '/api/v1/write-keys', t.key);
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('rate_limited');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);

      const raw = createRedis({ REDIS_URL }, { logger });
      clients.push(raw);
      await raw.connect();
      const keys = await raw.keys(`${prefix}*`);
      expect(keys).toEqual([
        expect.stringMatching(new RegExp(`^${prefix}api-rate-limit:api-key:[0-9a-f-]{36}$`)),
      ]);
      const [key] = keys;
      if (!key) throw new Error('no counter');
      expect(await raw.get(key)).toBe('4');
      const ttl = await raw.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
      await raw.del(key);
    });

    it('counts in the instance while Redis does not answer, and says so once', async () => {
      const down = await instance('cp-test-down:', false);
      const t = await h.tenant();
      expect((await exhaust(down, t.key)).status).toBe(429);
      expect(logLines.filter((line) => line.includes('redis not answering'))).toHaveLength(1);
    });
  });
});
