import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import { debuggerKeys, type DebugEventRecord, type RedisClient } from '@pipeline/redis';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';
import { errorPath } from './debug-recorder';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

type Entry = DebugEventRecord & { id: string };

/** The key's recorded events, oldest first. */
async function recorded(redis: RedisClient, writeKeyId: string): Promise<Entry[]> {
  const entries = (await redis.xrange(debuggerKeys.events(writeKeyId), '-', '+')) as [string, string[]][];
  return entries.map(([id, fields]) => ({ id, ...(JSON.parse(fields[1] as string) as DebugEventRecord) }));
}

/** Waits (bounded) until the key has at least `count` recorded events. */
async function waitForRecorded(redis: RedisClient, writeKeyId: string, count: number): Promise<Entry[]> {
  return waitUntil(`${count} events recorded for ${writeKeyId}`, async () => {
    const entries = await recorded(redis, writeKeyId);
    return entries.length >= count && entries;
  });
}

describe('the debugger recorder in ingestion (real Redis, Kafka, control plane)', () => {
  let h: Hosted;
  let redis: RedisClient;
  beforeAll(async () => {
    h = await startHosted('debugger', { backstopEps: 1_000_000, debugger: { connection: { REDIS_URL } } });
    redis = h.debugRedis as RedisClient;
  });
  const streams = () => [h.tenants.a.openWriteKeyId, h.tenants.b.openWriteKeyId].map(debuggerKeys.events);
  afterAll(async () => {
    await redis.del(...streams());
    await h.close();
  });
  beforeEach(() => redis.del(...streams()));

  it('records the accepted and the rejected events of a batch as received, with the errors', async () => {
    const good = event({ properties: { plan: 'pro', seats: 3 } });
    const bad = event({ timestamp: 'yesterday', event: 'Broken' });
    const before = Date.now();
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .set('X-Request-Id', 'req-debug-1')
      .send({ batch: [good, bad] });
    expect(response.status).toBe(202);
    const after = Date.now();
    const [first, second] = await waitForRecorded(redis, h.openWriteKeyId, 2);
    expect(first).toMatchObject({
      requestId: 'req-debug-1',
      status: 'accepted',
      type: 'track',
      event: 'Clicked',
      messageId: good.messageId,
      errors: [],
      payload: good,
    });
    const receivedAt = Date.parse(first?.receivedAt ?? '');
    expect(receivedAt >= before && receivedAt <= after).toBe(true);
    expect(second).toMatchObject({
      requestId: 'req-debug-1',
      status: 'rejected',
      type: 'track',
      event: 'Broken',
      messageId: bad.messageId,
      payload: bad,
    });
    expect(second?.errors).toEqual([
      {
        path: 'timestamp',
        message:
          'timestamp must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z), on a date that exists, in the years 0001-9999',
      },
    ]);
    // The answer's own errors say the same.
    expect(response.body.errors).toEqual([{ index: 1, errors: [{ message: second?.errors[0]?.message }] }]);
    // And the control plane's debugger API serves both, newest first.
    const listed = await h.controlPlane.as(h.apiKey).get(`/api/v1/write-keys/${h.openWriteKeyId}/events`);
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([second, first]);
    const rejected = await h.controlPlane
      .as(h.apiKey)
      .get(`/api/v1/write-keys/${h.openWriteKeyId}/events?status=rejected`);
    expect(rejected.body.data.map((e: Entry) => e.messageId)).toEqual([bad.messageId]);
  });

  it("records each account's events in its own key's stream only, and serves them to that account only", async () => {
    const { a, b } = h.tenants;
    const sent = {
      a: [event({ event: 'A1' }), event({ event: 'A2' })],
      b: [event({ event: 'B1' }), event({ event: 'B2' })],
    };
    const send = (writeKey: string, batch: object[]) =>
      collect(h.app).set('X-Write-Key', writeKey).send({ batch });
    // Interleaved, so an event recorded under the wrong key would land between the other's.
    expect((await send(b.openWriteKey, [sent.b[0]!])).status).toBe(202);
    expect((await send(a.openWriteKey, sent.a)).status).toBe(202);
    expect((await send(b.openWriteKey, [sent.b[1]!])).status).toBe(202);
    await waitForRecorded(redis, a.openWriteKeyId, 2);
    await waitForRecorded(redis, b.openWriteKeyId, 2);
    const ids = (entries: Entry[]) => entries.map((e) => e.messageId);
    expect(ids(await recorded(redis, a.openWriteKeyId))).toEqual(sent.a.map((e) => e.messageId));
    expect(ids(await recorded(redis, b.openWriteKeyId))).toEqual(sent.b.map((e) => e.messageId));

    // The control plane's debugger API: each account sees its own key's events, newest first,
    // and the other's key is not found.
    const list = (apiKey: string, writeKeyId: string) =>
      h.controlPlane.as(apiKey).get(`/api/v1/write-keys/${writeKeyId}/events`);
    const listed = async (apiKey: string, writeKeyId: string) => {
      const response = await list(apiKey, writeKeyId);
      return [response.status, response.body.data?.map((e: Entry) => e.messageId)];
    };
    expect(await listed(a.apiKey, a.openWriteKeyId)).toEqual([200, sent.a.map((e) => e.messageId).reverse()]);
    expect(await listed(b.apiKey, b.openWriteKeyId)).toEqual([200, sent.b.map((e) => e.messageId).reverse()]);
    expect((await list(a.apiKey, b.openWriteKeyId)).status).toBe(404);
    expect((await list(b.apiKey, a.openWriteKeyId)).status).toBe(404);
  });

  it('records a request with no valid event, each event with its own errors', async () => {
    const noName = {
      type: 'track',
      anonymousId: 'a',
      messageId: randomUUID(),
      timestamp: new Date().toISOString(),
    };
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: [noName, 42] });
    expect(response.status).toBe(400);
    const entries = await waitForRecorded(redis, h.openWriteKeyId, 2);
    expect(entries.map((e) => [e.status, e.type, e.messageId, e.errors])).toEqual([
      ['rejected', 'track', noName.messageId, [{ path: 'event', message: 'event is required' }]],
      ['rejected', null, null, [{ path: '', message: 'event must be an object' }]],
    ]);
    expect(entries[1]?.payload).toEqual({ value: 42 });
  });

  it('records a body that cannot be read as one item with the request error; an unknown key records nothing', async () => {
    const before = h.debugStats?.recorded ?? 0;
    const unknown = await collect(h.app).set('X-Write-Key', 'wk_unknown_key_000000000').send(event());
    expect(unknown.status).toBe(401);
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .set('Content-Type', 'text/plain')
      .send('{"type": "track", ');
    expect(response.status).toBe(400);
    const [only] = await waitForRecorded(redis, h.openWriteKeyId, 1);
    expect(only).toMatchObject({
      status: 'rejected',
      type: null,
      event: null,
      messageId: null,
      payload: {},
      errors: [{ path: '', message: 'body is not valid JSON', code: 'invalid_payload' }],
    });
    // The unknown key's request was recorded nowhere: only this one entry was written.
    await waitUntil('the entry counted', async () => (h.debugStats?.recorded ?? 0) >= before + 1);
    expect(h.debugStats?.recorded).toBe(before + 1);
  });

  it("records Segment's routes and a truncated payload above 16 KB", async () => {
    const big = 'x'.repeat(20_000);
    const response = await request(h.app)
      .post('/v1/track')
      .set('Authorization', `Basic ${Buffer.from(`${h.openWriteKey}:`).toString('base64')}`)
      .send({ userId: 'seg-1', event: 'Big', messageId: 'seg-msg-1', properties: { big } });
    expect(response.status).toBe(200);
    const [only] = await waitForRecorded(redis, h.openWriteKeyId, 1);
    expect(only).toMatchObject({
      status: 'accepted',
      type: 'track',
      event: 'Big',
      messageId: 'seg-msg-1',
      truncated: true,
      payload: { type: 'track', event: 'Big', userId: 'seg-1', messageId: 'seg-msg-1', truncated: true },
    });
    expect(only?.payload.bytes).toBeGreaterThan(20_000);
    expect(JSON.stringify(only).length).toBeLessThan(16 * 1024);
  });

  it('records rate-limited events as rejected with the request error', async () => {
    const limited = await startHosted('debugger limited', {
      backstopEps: 2,
      debugger: { connection: { REDIS_URL } },
    });
    try {
      const key = debuggerKeys.events(limited.openWriteKeyId);
      const response = await collect(limited.app)
        .set('X-Write-Key', limited.openWriteKey)
        .send({ batch: [event(), event(), event()] });
      expect(response.status).toBe(429);
      const entries = await waitForRecorded(limited.debugRedis as RedisClient, limited.openWriteKeyId, 3);
      expect(entries.map((e) => e.status)).toEqual(['rejected', 'rejected', 'rejected']);
      expect(entries[0]?.errors).toEqual([
        { path: '', message: 'Over the second rate limit', code: 'rate_limit_exceeded' },
      ]);
      // Another account's key has its own budget: its events are accepted, and only they are in its stream.
      const { b } = limited.tenants;
      const other = [event(), event()];
      expect(
        (await collect(limited.app).set('X-Write-Key', b.openWriteKey).send({ batch: other })).status,
      ).toBe(202);
      const others = await waitForRecorded(limited.debugRedis as RedisClient, b.openWriteKeyId, 2);
      expect(others.map((e) => [e.status, e.messageId])).toEqual(other.map((e) => ['accepted', e.messageId]));
      await limited.debugRedis?.del(key, debuggerKeys.events(b.openWriteKeyId));
    } finally {
      await limited.close();
    }
  });
});

describe('debugger sampling and Redis down', () => {
  it('records at most DEBUGGER_MAX_EVENTS_PER_SECOND per key and counts the rest', async () => {
    // One second of the sampler's clock for the whole test: both keys share the window.
    const second = Date.UTC(2026, 0, 15, 12, 0, 0, 100);
    const h = await startHosted('debugger sampling', {
      backstopEps: 1_000_000,
      debugger: { connection: { REDIS_URL }, maxPerSecond: 5, now: () => second },
    });
    const { a, b } = h.tenants;
    try {
      const batch = Array.from({ length: 20 }, (_, i) => event({ event: `E${i}` }));
      expect((await collect(h.app).set('X-Write-Key', a.openWriteKey).send({ batch })).status).toBe(202);
      const entries = await waitForRecorded(h.debugRedis as RedisClient, a.openWriteKeyId, 5);
      expect(entries.map((e) => e.event)).toEqual(['E0', 'E1', 'E2', 'E3', 'E4']);
      // B's key, in the same second, has its own 5.
      const other = Array.from({ length: 6 }, (_, i) => event({ event: `B${i}` }));
      expect((await collect(h.app).set('X-Write-Key', b.openWriteKey).send({ batch: other })).status).toBe(
        202,
      );
      const others = await waitForRecorded(h.debugRedis as RedisClient, b.openWriteKeyId, 5);
      expect(others.map((e) => e.event)).toEqual(['B0', 'B1', 'B2', 'B3', 'B4']);
      expect(h.debugStats?.sampledOut).toBe(15 + 1);
      const metrics = await h.metrics.text();
      expect(metrics).toContain('pipeline_ingestion_debugger_events_total{result="sampled_out"} 16');
      await h.debugRedis?.del(...[a, b].map((t) => debuggerKeys.events(t.openWriteKeyId)));
    } finally {
      await h.close();
    }
  });

  it('answers /collect as usual with the debugger Redis on a closed port, and counts the loss', async () => {
    const h = await startHosted('debugger redis down', {
      backstopEps: 1_000_000,
      debugger: { connection: { REDIS_URL: 'redis://127.0.0.1:1' } },
    });
    try {
      expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202);
      expect(h.debugRedis?.status).not.toBe('ready');
      for (let i = 1; i <= 20; i++) {
        const response = await collect(h.app)
          .set('X-Write-Key', h.openWriteKey)
          .send({ batch: [event(), event({ timestamp: 'bad' })] });
        expect(response.status).toBe(202);
        expect(response.body).toMatchObject({ accepted: true, received: 2, invalid: 1 });
        // Nothing waits for the debugger's Redis: the loss is counted before the answer, not
        // after a connect attempt.
        expect(h.debugStats?.failed).toBe(1 + i * 2);
      }
      expect(h.debugStats?.recorded).toBe(0);
    } finally {
      await h.close();
    }
  });
});

describe('errorPath', () => {
  it.each([
    ['properties.plan must be string', 'properties.plan'],
    ['anonymousId is required', 'anonymousId'],
    ['event is required', 'event'],
    ['event must be an object', ''],
    ['event is 40000 bytes; at most 32768 are accepted', ''],
    ['', ''],
  ])('%s -> %s', (message, path) => {
    expect(errorPath(message)).toBe(path);
  });
});
