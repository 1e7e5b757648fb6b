import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import {
  createRedis,
  debuggerKeys,
  type DebugEventRecord,
  type DeliveryOutcomeRecord,
  type RedisClient,
} from '@pipeline/redis';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { hashToken } from '../auth/secret-token';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const logger = createLogger({ service: 'debugger-test', stream: new PassThrough() });

const record = (overrides: Partial<DebugEventRecord> = {}): DebugEventRecord => ({
  receivedAt: new Date().toISOString(),
  requestId: randomUUID(),
  status: 'accepted',
  type: 'track',
  event: 'Clicked',
  messageId: randomUUID(),
  errors: [],
  payload: { type: 'track', event: 'Clicked' },
  ...overrides,
});

/** A server-sent-events reader over fetch, as the console reads the stream. */
async function openStream(url: string, key: string, lastEventId?: string) {
  const abort = new AbortController();
  const response = await fetch(url, {
    headers: { Authorization: `Bearer ${key}`, ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}) },
    signal: abort.signal,
  });
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const events: { id: string; event: string; data: Record<string, unknown> }[] = [];
  const comments: string[] = [];
  const pump = (async () => {
    if (!reader) return;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        buffer += decoder.decode(value, { stream: true });
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (block.startsWith(':')) {
            comments.push(block.slice(1).trim());
            continue;
          }
          const fields = Object.fromEntries(
            block
              .split('\n')
              .map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 2)]),
          );
          events.push({ id: fields.id, event: fields.event, data: JSON.parse(fields.data) });
        }
      }
    } catch {
      // Aborted.
    }
  })();
  return {
    response,
    events,
    comments,
    /** Settles when the server ends the stream (or the client aborts it). */
    ended: pump,
    async waitFor(count: number, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (events.length < count) {
        if (Date.now() > deadline) throw new Error(`received ${events.length} of ${count} events`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      return events;
    },
    async close() {
      abort.abort();
      await pump;
    },
  };
}

/** Polls `condition` every 50 ms until it holds or `timeoutMs` passes; returns whether it held. */
async function eventually(condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Sends a stream request on a raw socket and hangs up as soon as it is written: the server is
 * still checking the key when the client is gone, before any event or header.
 */
async function requestAndHangUp(port: number, path: string, key: string): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  await new Promise<void>((resolve, reject) =>
    socket.write(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      (error) => (error ? reject(error) : resolve()),
    ),
  );
  socket.destroy();
}

describe('the event debugger API (real Redis and PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let other: Tenant;
  let redis: RedisClient;
  let writeKeyId: string;
  let otherWriteKeyId: string;
  let server: Server;
  let base: string;

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger });
    await redis.connect();
    h = await startHarness('debugger', {
      debugger: {
        redis,
        connection: { REDIS_URL },
        maxStreamsPerKey: 2,
        keepAliveMs: 300,
        revalidateMs: 200,
      },
    });
    t = await h.tenant();
    other = await h.tenant();
    writeKeyId = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data.id;
    otherWriteKeyId = (await h.as(other.key).post('/api/v1/write-keys').send({ name: 'other' })).body.data.id;
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await redis.del(debuggerKeys.events(writeKeyId), debuggerKeys.outcomes(writeKeyId));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await h.close();
    redis.disconnect();
  });

  const add = async (event: DebugEventRecord) =>
    (await redis.xadd(debuggerKeys.events(writeKeyId), '*', 'd', JSON.stringify(event))) as string;

  it('lists the recent events newest first, filtered by type, event name and status', async () => {
    await redis.del(debuggerKeys.events(writeKeyId));
    const clicked = record();
    const page = record({ type: 'page', event: null, payload: { type: 'page', name: 'Home' } });
    const bad = record({
      status: 'rejected',
      event: 'Broken',
      errors: [{ path: 'timestamp', message: 'timestamp must be an ISO 8601 date-time' }],
    });
    const unread = record({
      status: 'rejected',
      type: null,
      event: null,
      messageId: null,
      payload: {},
      errors: [{ path: '', message: 'body is not valid JSON', code: 'invalid_payload' }],
    });
    const ids = [];
    for (const event of [clicked, page, bad, unread]) ids.push(await add(event));

    const all = await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events`);
    expect(all.status).toBe(200);
    expect(all.body.data).toEqual([
      { id: ids[3], ...unread },
      { id: ids[2], ...bad },
      { id: ids[1], ...page },
      { id: ids[0], ...clicked },
    ]);
    const filtered = async (query: string) =>
      (await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events?${query}`)).body.data.map(
        (e: { id: string }) => e.id,
      );
    expect(await filtered('type=page')).toEqual([ids[1]]);
    expect(await filtered('status=rejected')).toEqual([ids[3], ids[2]]);
    expect(await filtered('type=track&status=accepted&event=Clicked')).toEqual([ids[0]]);
    expect(await filtered('event=Broken')).toEqual([ids[2]]);
    expect(await filtered('limit=2')).toEqual([ids[3], ids[2]]);

    for (const query of ['limit=0', 'limit=101', 'type=purchase', 'status=maybe']) {
      const refused = await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events?${query}`);
      expect([refused.status, refused.body.code]).toEqual([400, 'validation_failed']);
    }
  });

  it('lists only events with a violation or an unread plan under violations=true', async () => {
    await redis.del(debuggerKeys.events(writeKeyId));
    const plan = { planId: randomUUID(), version: 3 };
    const violation = {
      code: 'missing_required',
      path: '/properties/order_id',
      keyword: 'required',
      message: '/properties/order_id is required',
      ruleVersion: 3,
    };
    const invalid = record({
      plan,
      violations: [violation],
      planAction: {
        action: 'quarantine',
        omitted: [],
        destinations: { warehouse: { action: 'allow', omitted: [] } },
      },
    });
    const valid = record({ plan, violations: [], planAction: { action: 'allow', omitted: [] } });
    const unchecked = record({
      plan: { planId: plan.planId, version: null },
      violations: [],
      planAction: { action: 'allow', omitted: [] },
    });
    const unplanned = record();
    const rejected = record({
      status: 'rejected',
      errors: [{ path: 'event', message: 'event is required' }],
    });
    const ids = [];
    for (const event of [invalid, valid, unchecked, unplanned, rejected]) ids.push(await add(event));
    const listed = async (query: string) =>
      (await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events?${query}`)).body.data;
    // The violations and the action taken come back as recorded.
    expect(await listed('violations=true')).toEqual([
      { id: ids[2], ...unchecked },
      { id: ids[0], ...invalid },
    ]);
    expect((await listed('violations=false')).map((e: { id: string }) => e.id)).toEqual([...ids].reverse());
    expect((await listed('violations=true&limit=1')).map((e: { id: string }) => e.id)).toEqual([ids[2]]);
    const refused = await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events?violations=maybe`);
    expect([refused.status, refused.body.code]).toEqual([400, 'validation_failed']);
  });

  it('lists one message’s delivery outcomes oldest first', async () => {
    const messageId = randomUUID();
    const outcomes: DeliveryOutcomeRecord[] = [
      {
        destination: 'warehouse',
        integrationId: null,
        outcome: 'stored',
        reason: null,
        at: '2026-03-01T10:00:01.000Z',
      },
      {
        destination: 'webhook',
        integrationId: 'int-1',
        outcome: 'retried',
        reason: 'http_503',
        at: '2026-03-01T10:00:02.000Z',
      },
      {
        destination: 'webhook',
        integrationId: 'int-1',
        outcome: 'delivered',
        reason: null,
        omitted: ['/properties/coupon'],
        at: '2026-03-01T10:00:05.000Z',
      },
      {
        destination: 'webhook',
        integrationId: 'int-2',
        outcome: 'quarantined',
        reason: 'missing_required,type_mismatch',
        at: '2026-03-01T10:00:06.000Z',
      },
    ];
    const key = debuggerKeys.outcomes(writeKeyId);
    await redis.xadd(key, '*', 'm', messageId, 'd', JSON.stringify(outcomes[0]));
    await redis.xadd(key, '*', 'm', randomUUID(), 'd', JSON.stringify(outcomes[0]));
    await redis.xadd(key, '*', 'm', messageId, 'd', JSON.stringify(outcomes[1]));
    await redis.xadd(key, '*', 'm', messageId, 'd', JSON.stringify(outcomes[2]));
    await redis.xadd(key, '*', 'm', messageId, 'd', JSON.stringify(outcomes[3]));
    const response = await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events/${messageId}/deliveries`);
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ data: outcomes });
    const none = await h.as(t.key).get(`/api/v1/write-keys/${writeKeyId}/events/${randomUUID()}/deliveries`);
    expect(none.body).toEqual({ data: [] });
  });

  it("answers 404 for another account's or an unknown write key, 403 without write_keys.read", async () => {
    for (const path of [
      `/api/v1/write-keys/${otherWriteKeyId}/events`,
      `/api/v1/write-keys/${otherWriteKeyId}/events/m1/deliveries`,
      `/api/v1/write-keys/${otherWriteKeyId}/events/stream`,
      `/api/v1/write-keys/${randomUUID()}/events`,
      `/api/v1/write-keys/not-an-id/events/stream`,
    ]) {
      const response = await h.as(t.key).get(path);
      expect([path, response.status, response.body.code]).toEqual([path, 404, 'not_found']);
    }
    const writeOnly = await t.keyWith(['write_keys.write']);
    for (const path of [
      `/api/v1/write-keys/${writeKeyId}/events`,
      `/api/v1/write-keys/${writeKeyId}/events/m1/deliveries`,
      `/api/v1/write-keys/${writeKeyId}/events/stream`,
    ]) {
      const response = await h.as(writeOnly).get(path);
      expect([path, response.status]).toEqual([path, 403]);
    }
    const anonymous = await fetch(`${base}/api/v1/write-keys/${writeKeyId}/events/stream`);
    expect(anonymous.status).toBe(401);
  });

  it('streams new events, keeps alive, resumes after Last-Event-ID, and bounds streams per API key', async () => {
    const url = `${base}/api/v1/write-keys/${writeKeyId}/events/stream`;
    const before = await add(record({ event: 'Before' }));
    const stream = await openStream(url, t.key);
    expect(stream.response.status).toBe(200);
    expect(stream.response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const first = record({ event: 'Live 1' });
    const firstId = await add(first);
    const [received] = await stream.waitFor(1, 20_000);
    // Only what arrived after the stream opened: not `Before`.
    expect(received).toEqual({ id: firstId, event: 'debug-event', data: { id: firstId, ...first } });
    expect(before < firstId).toBe(true);

    // A keep-alive comment while nothing arrives (every 300 ms here, 15 s by default).
    const deadline = Date.now() + 20_000;
    while (!stream.comments.includes('keep-alive') && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(stream.comments).toContain('keep-alive');

    // Two streams per key here: a third is refused while two are open.
    const second = await openStream(url, t.key);
    expect(second.response.status).toBe(200);
    const third = await fetch(url, { headers: { Authorization: `Bearer ${t.key}` } });
    expect(third.status).toBe(429);
    expect((await third.json()).code).toBe('too_many_streams');
    await second.close();
    await stream.close();

    // Missed while disconnected: resumed after the last id seen.
    const missed = [record({ event: 'Missed 1' }), record({ event: 'Missed 2' })];
    const missedIds = [await add(missed[0] as DebugEventRecord), await add(missed[1] as DebugEventRecord)];
    // The closed streams' slots come back once the server saw them go.
    let resumed: Awaited<ReturnType<typeof openStream>> | undefined;
    const until = Date.now() + 20_000;
    for (;;) {
      const attempt = await openStream(url, t.key, firstId);
      if (attempt.response.status === 200) {
        resumed = attempt;
        break;
      }
      await attempt.close();
      if (Date.now() > until) throw new Error(`stream refused: ${attempt.response.status}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const events = await resumed.waitFor(2);
    expect(events.map((e) => e.id)).toEqual(missedIds);
    expect(events.map((e) => e.data.event)).toEqual(['Missed 1', 'Missed 2']);
    await resumed.close();
  });

  /** The debugger's Redis connections reading this write key's stream (CLIENT LIST, by name). */
  const streamReaders = async (id: string) =>
    String(await redis.client('LIST'))
      .split('\n')
      .filter((line) => line.includes(` name=debugger-stream:${id} `)).length;

  it('frees the slot and the Redis reader of a client that hangs up before the first event', async () => {
    const tenant = await h.tenant();
    const id = (await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'hang-up' })).body.data.id;
    const path = `/api/v1/write-keys/${id}/events/stream`;
    const port = (server.address() as AddressInfo).port;
    // Three times the two slots of this harness: each leaked stream would hold one for good.
    for (let i = 0; i < 6; i += 1) await requestAndHangUp(port, path, tenant.key);

    let opened: Awaited<ReturnType<typeof openStream>> | undefined;
    const admitted = await eventually(async () => {
      const attempt = await openStream(`${base}${path}`, tenant.key);
      if (attempt.response.status === 200) opened = attempt;
      else await attempt.close();
      return opened !== undefined;
    }, 10_000);
    expect(admitted).toBe(true);
    // The open stream is the one reader left: the six that hung up left none behind.
    expect(await eventually(async () => (await streamReaders(id)) === 1, 10_000)).toBe(true);
    await opened?.close();
    expect(await eventually(async () => (await streamReaders(id)) === 0, 10_000)).toBe(true);
  });

  it('ends an open stream once its API key is revoked', async () => {
    const tenant = await h.tenant();
    const id = (await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'revoked' })).body.data.id;
    const stream = await openStream(`${base}/api/v1/write-keys/${id}/events/stream`, tenant.key);
    expect(stream.response.status).toBe(200);
    let ended = false;
    void stream.ended.then(() => {
      ended = true;
    });
    await h.db.dataSource
      .getRepository(ApiKeyEntity)
      .update({ keyHash: hashToken(tenant.key) }, { revokedAt: new Date() });
    try {
      // The key is checked every 200 ms here (every 5 s by default); the bound is for a loaded
      // machine, and the closing comment below says the revocation is what ended it.
      expect(await eventually(async () => ended, 10_000)).toBe(true);
      expect(stream.events).toEqual([]);
      expect(stream.comments.at(-1)).toBe('end invalid_api_key');
      expect(await eventually(async () => (await streamReaders(id)) === 0, 10_000)).toBe(true);
      const again = await fetch(`${base}/api/v1/write-keys/${id}/events/stream`, {
        headers: { Authorization: `Bearer ${tenant.key}` },
      });
      expect(again.status).toBe(401);
    } finally {
      await stream.close();
    }
  });

  it('answers 503 debugger_unavailable without Redis', async () => {
    const bare = await startHarness('debugger without redis');
    try {
      const tenant = await bare.tenant();
      const id = (await bare.as(tenant.key).post('/api/v1/write-keys').send({ name: 'k' })).body.data.id;
      for (const path of [`/api/v1/write-keys/${id}/events`, `/api/v1/write-keys/${id}/events/stream`]) {
        const response = await bare.as(tenant.key).get(path);
        expect([path, response.status, response.body.code]).toEqual([path, 503, 'debugger_unavailable']);
      }
    } finally {
      await bare.close();
    }
  });
});
