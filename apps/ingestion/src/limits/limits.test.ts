import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';
import { batchDedupeKey } from '../outbox/batch-dedupe-key';
import { LocalBackstop, SharedRateLimiter } from './rate-limits';

const batchOf = (n: number) => ({ batch: Array.from({ length: n }, () => event()) });

/**
 * The limits' clock, set by the test: windows (seconds, UTC days) line up by moving it, not by
 * waiting, and a run across midnight UTC sees the day the test says.
 */
function testClock(start: number) {
  let ms = start;
  return { now: () => ms, set: (to: number) => (ms = to), advance: (by: number) => (ms += by) };
}

describe('rate limits of docs/tracking-api.md#rate-limits (real Redis)', () => {
  describe('shared per-key limits, driven low', () => {
    let h: Hosted;
    const clock = testClock(Date.UTC(2026, 0, 15, 12, 0, 0, 100));
    beforeAll(async () => {
      h = await startHosted('limits shared', { perSecond: 5, perDay: 12, now: clock.now });
    });
    afterAll(() => h.close());

    it("answers A 429 second, then 429 day until midnight UTC, while B's requests in the same windows pass", async () => {
      const { a, b } = h.tenants;
      const sent: Record<'a' | 'b', string[]> = { a: [], b: [] };
      const send = async (who: 'a' | 'b', n: number) => {
        const body = batchOf(n);
        const response = await collect(h.app).set('X-Write-Key', h.tenants[who].openWriteKey).send(body);
        if (response.status === 202) sent[who].push(...body.batch.map((e) => e.messageId));
        return response;
      };
      expect((await send('a', 5)).status).toBe(202);
      const second = await send('a', 1);
      expect(second.status).toBe(429);
      expect(second.body).toEqual({
        ok: false,
        error: 'rate_limit_exceeded',
        limitType: 'second',
        retryAfter: 1,
      });
      expect(second.headers['retry-after']).toBe('1');
      // The same second: B's own budget is untouched by A's.
      expect((await send('b', 5)).status).toBe(202);

      clock.advance(1000);
      expect((await send('a', 5)).status).toBe(202);
      clock.advance(1000); // 12:00:02.100 UTC: 43,197.9 s before midnight
      const day = await send('a', 5);
      expect(day.status).toBe(429);
      expect(day.body).toEqual({
        ok: false,
        error: 'rate_limit_exceeded',
        limitType: 'day',
        retryAfter: 43_198,
      });
      expect(day.headers['retry-after']).toBe('43198');
      expect((await send('b', 5)).status).toBe(202);
      // The refused batch was not counted: 2 more events still fit the day.
      expect((await send('a', 2)).status).toBe(202);
      clock.set(Date.UTC(2026, 0, 15, 23, 59, 59, 900));
      expect((await send('a', 1)).body).toEqual({
        ok: false,
        error: 'rate_limit_exceeded',
        limitType: 'day',
        retryAfter: 1,
      });
      // A's day is spent, B's (10 of 12) is not.
      expect((await send('b', 1)).status).toBe(202);
      // Midnight UTC opens a new day's window.
      clock.set(Date.UTC(2026, 0, 16, 0, 0, 0, 0));
      expect((await send('a', 5)).status).toBe(202);

      expect([sent.a.length, sent.b.length]).toEqual([17, 11]);
      const ids = new Set([...sent.a, ...sent.b]);
      const published = (await h.readTopic())
        .filter((e) => ids.has(e.event.messageId))
        .map((e) => `${e.accountId} ${e.event.messageId}`)
        .sort();
      expect(published).toEqual(
        [...sent.a.map((id) => `${a.accountId} ${id}`), ...sent.b.map((id) => `${b.accountId} ${id}`)].sort(),
      );
    });

    it('limits each write key separately', async () => {
      expect(
        (
          await collect(h.app)
            .set('X-Write-Key', h.writeKey)
            .set('Origin', 'https://example.com')
            .send(batchOf(3))
        ).status,
      ).toBe(202);
    });
  });

  describe('per-key overrides from the tenant record', () => {
    let h: Hosted;
    beforeAll(async () => {
      h = await startHosted('limits override', { now: testClock(Date.UTC(2026, 0, 15, 12, 0, 0, 100)).now });
    });
    afterAll(() => h.close());

    it('limits a key by its own eventsPerSecond instead of the default', async () => {
      const api = h.controlPlane.as(h.apiKey);
      const key = (
        await api
          .post('/api/v1/write-keys')
          .send({ name: 'slow', rateLimits: { eventsPerSecond: 3, eventsPerDay: null } })
      ).body.data.key;
      expect((await collect(h.app).set('X-Write-Key', key).send(batchOf(3))).status).toBe(202);
      expect((await collect(h.app).set('X-Write-Key', key).send(batchOf(1))).body).toMatchObject({
        limitType: 'second',
      });
      expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(batchOf(10))).status).toBe(202);
    });
  });

  describe('the per-instance backstop, without any shared store', () => {
    let h: Hosted;
    beforeAll(async () => {
      h = await startHosted('limits backstop', {
        backstopEps: 4,
        withRedis: false,
        now: testClock(Date.UTC(2026, 0, 15, 12, 0, 0, 100)).now,
      });
    });
    afterAll(() => h.close());

    it("holds without Redis, per key: A over its second, B's events in the same second pass", async () => {
      const { a, b } = h.tenants;
      expect((await collect(h.app).set('X-Write-Key', a.openWriteKey).send(batchOf(4))).status).toBe(202);
      const over = await collect(h.app).set('X-Write-Key', a.openWriteKey).send(batchOf(1));
      expect([over.status, over.body]).toEqual([
        429,
        { ok: false, error: 'rate_limit_exceeded', limitType: 'second', retryAfter: 1 },
      ]);
      const other = batchOf(4);
      expect((await collect(h.app).set('X-Write-Key', b.openWriteKey).send(other)).status).toBe(202);
      const ids = other.batch.map((e) => e.messageId);
      const published = (await h.readTopic())
        .filter((e) => ids.includes(e.event.messageId))
        .map((e) => `${e.accountId} ${e.event.messageId}`);
      expect(published.sort()).toEqual(ids.map((id) => `${b.accountId} ${id}`).sort());
    });
  });

  describe('write-key checks per IP', () => {
    let h: Hosted;
    beforeAll(async () => {
      // Inside one minute of the test's clock: a real minute boundary mid-test changes nothing.
      h = await startHosted('limits auth', {
        authAttemptsPerMinute: 3,
        now: testClock(Date.UTC(2026, 0, 15, 12, 0, 0, 100)).now,
      });
    });
    afterAll(() => h.close());

    it('counts only keys not in the valid-key cache, then answers 429 auth_resolution with Retry-After 60', async () => {
      expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202); // 1 check, now cached
      for (let i = 0; i < 5; i += 1) {
        expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202); // cached: not counted
      }
      expect((await collect(h.app).set('X-Write-Key', 'wk_guess_1').send(event())).status).toBe(401);
      expect((await collect(h.app).set('X-Write-Key', 'wk_guess_2').send(event())).status).toBe(401);
      const limited = await collect(h.app).set('X-Write-Key', 'wk_guess_3').send(event());
      expect(limited.status).toBe(429);
      expect(limited.body).toEqual({
        ok: false,
        error: 'rate_limit_exceeded',
        limitType: 'auth_resolution',
        retryAfter: 60,
      });
      expect(limited.headers['retry-after']).toBe('60');
      expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202);
    });
  });

  describe('write-key checks per IP behind a proxy', () => {
    let h: Hosted;
    beforeAll(async () => {
      h = await startHosted('limits auth proxied', {
        authAttemptsPerMinute: 3,
        trustedProxies: ['loopback'],
        now: testClock(Date.UTC(2026, 0, 15, 12, 0, 0, 100)).now,
      });
    });
    afterAll(() => h.close());

    it('counts the address the proxy saw, however the client forges X-Forwarded-For', async () => {
      // The proxy appends the real address; the guesser varies what it sends to the left.
      const real = `203.0.113.${1 + Math.floor(Math.random() * 250)}`;
      const guess = (i: number) =>
        collect(h.app)
          .set('X-Write-Key', `wk_guess_${i}`)
          .set('X-Forwarded-For', `198.51.100.${i}, ${real}`)
          .send(event());
      expect((await guess(1)).status).toBe(401);
      expect((await guess(2)).status).toBe(401);
      expect((await guess(3)).status).toBe(401);
      const limited = await guess(4);
      expect(limited.status).toBe(429);
      expect(limited.body).toMatchObject({ error: 'rate_limit_exceeded', limitType: 'auth_resolution' });
    });

    it('counts an IPv6 client by its /64: 200 guesses from 200 addresses of one /64 are mostly refused', async () => {
      const hex = () => Math.floor(Math.random() * 0x10000).toString(16);
      // A /64 of its own: the counts of the test above stay for the whole minute of the test clock.
      const prefix = `2001:db8:${hex()}:${hex()}`;
      const statuses: number[] = [];
      for (let i = 0; i < 200; i += 1) {
        const response = await collect(h.app)
          .set('X-Write-Key', `wk_guess_${i}`)
          .set('X-Forwarded-For', `${prefix}:${hex()}:${hex()}:${hex()}:${i.toString(16)}`)
          .send(event());
        statuses.push(response.status);
      }
      const count = (status: number) => statuses.filter((s) => s === status).length;
      expect({ refused: count(429), checked: count(401) }).toEqual({ refused: 197, checked: 3 });
      // Another /64 of the same /48 has its own budget; the same /64 in another notation has not.
      const [g1, g2, g3, g4] = prefix.split(':');
      const neighbour = `2001:db8:${g3}:${(parseInt(g4 ?? '0', 16) ^ 1).toString(16)}::1`;
      expect(
        (
          await collect(h.app)
            .set('X-Write-Key', 'wk_guess_x')
            .set('X-Forwarded-For', neighbour)
            .send(event())
        ).status,
      ).toBe(401);
      const spelled = `${g1}:0${g2}:${g3?.toUpperCase()}:${g4}:0:0:0:1`;
      expect(
        (await collect(h.app).set('X-Write-Key', 'wk_guess_y').set('X-Forwarded-For', spelled).send(event()))
          .status,
      ).toBe(429);
    });
  });
});

describe('the shared limits and the dedupe check in one round trip (real Redis)', () => {
  it('answers whether the dedupe key exists along with an allowed decision, and counts either way', async () => {
    const { createRedis } = await import('@pipeline/redis');
    const logger = createLogger({ service: 't', stream: new PassThrough() });
    const redis = createRedis(
      { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
      { logger, keyPrefix: `test:${randomUUID()}:` },
    );
    await redis.connect();
    try {
      const at = Date.UTC(2026, 0, 15, 12, 0, 0, 100);
      const shared = new SharedRateLimiter(
        redis,
        { eventsPerSecond: 10, eventsPerDay: 100 },
        logger,
        () => at,
      );
      expect(await shared.take('k', 4, undefined, batchDedupeKey('k', 'b1'))).toEqual({
        allowed: true,
        exists: false,
      });
      await redis.set(batchDedupeKey('k', 'b1'), '1');
      expect(await shared.take('k', 4, undefined, batchDedupeKey('k', 'b1'))).toEqual({
        allowed: true,
        exists: true,
      });
      // 8 of 10 counted, seen or not: over the second's limit, the key is not looked at.
      expect(await shared.take('k', 4, undefined, batchDedupeKey('k', 'b1'))).toEqual({
        allowed: false,
        limitType: 'second',
        retryAfter: 1,
      });
      expect(await redis.get('rl:s:{k}:1768478400')).toBe('8');
      expect(await shared.take('k', 2)).toEqual({ allowed: true });
    } finally {
      redis.disconnect();
    }
  });
});

describe('limiters without a working store', () => {
  it('let requests through, logged, when Redis is down; the backstop still counts', async () => {
    const { createRedis } = await import('@pipeline/redis');
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (c: Buffer) => lines.push(c.toString()));
    const redis = createRedis(
      { REDIS_URL: 'redis://127.0.0.1:1' },
      { logger: createLogger({ service: 't', stream: new PassThrough() }) },
    );
    await redis.connect().catch(() => undefined);
    const shared = new SharedRateLimiter(
      redis,
      { eventsPerSecond: 1, eventsPerDay: 1 },
      createLogger({ service: 't', stream }),
    );
    expect(await shared.take('k', 50)).toEqual({ allowed: true });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.join('')).toMatch(/shared rate limit store unavailable/);
    const backstop = new LocalBackstop(10, () => 5_000);
    expect(backstop.take('k', 10)).toEqual({ allowed: true });
    expect(backstop.take('k', 1)).toEqual({ allowed: false, limitType: 'second', retryAfter: 1 });
    redis.disconnect();
  });
});
