import { deflateSync, gzipSync } from 'node:zlib';
import request from 'supertest';
import { UNSUBSCRIBED_MAX_TTL_MS } from '@pipeline/tenancy';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

describe('POST /collect, hosted mode (real Kafka, Redis, PostgreSQL and control plane)', () => {
  let h: Hosted;
  // The write-key cache's clock: a cached key expires when the test moves it, not after a wait.
  let cacheMs = Date.UTC(2026, 0, 15, 12, 0, 0);
  beforeAll(async () => {
    h = await startHosted('collect', { cacheNow: () => cacheMs });
  });
  afterAll(() => h.close());

  const origin = 'https://shop.example.com';

  it('answers 202 after committing a single event to the outbox, with the spec fields', async () => {
    const single = event({ writeKey: h.writeKey, properties: { sku: 'A' } });
    const response = await collect(h.app).set('Origin', origin).set('User-Agent', 'TestAgent/1').send(single);
    expect(response.status).toBe(202);
    expect(response.body).toEqual({
      ok: true,
      received: 1,
      invalid: 0,
      errors: [],
      accepted: true,
      batchId: expect.stringMatching(/^[0-9a-f]{32}$/),
      deliveryCount: 2,
      deduplicated: false,
    });
    const envelopes = await h.readTopic(1);
    const committed = envelopes.find((e) => e.event.messageId === single.messageId);
    expect(committed).toMatchObject({
      v: 2,
      accountId: h.accountId,
      batchId: response.body.batchId,
      userAgent: 'TestAgent/1',
      ip: expect.stringMatching(/127\.0\.0\.1/),
      event: { type: 'track', event: 'Clicked', properties: { sku: 'A' } },
    });
  });

  it('accepts a batch with partial success: valid events are committed, invalid ones listed by index', async () => {
    const good = [event(), event({ type: 'page' })];
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send({
        sentAt: new Date().toISOString(),
        batch: [good[0], { ...event(), event: undefined }, good[1], { type: 'identify', messageId: 'x' }],
      });
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ ok: true, received: 4, invalid: 2, accepted: true });
    expect(response.body.errors).toEqual([
      { index: 1, errors: [{ message: 'event is required' }] },
      {
        index: 3,
        errors: [
          { message: 'timestamp is required' },
          { message: 'userId is required' },
          { message: 'anonymousId is required' },
        ],
      },
    ]);
    const ids = (await h.readTopic()).map((e) => e.event.messageId);
    for (const e of good) expect(ids).toContain(e.messageId);
  });

  it('acknowledges a retried batch again without publishing it twice', async () => {
    const batch = { batch: [event(), event()] };
    const first = await collect(h.app).set('X-Write-Key', h.openWriteKey).send(batch);
    const second = await collect(h.app).set('X-Write-Key', h.openWriteKey).send(batch);
    expect(first.body).toMatchObject({ deduplicated: false });
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ accepted: true, deduplicated: true, batchId: first.body.batchId });
    const copies = (await h.readTopic()).filter((e) => e.event.messageId === batch.batch[0]!.messageId);
    expect(copies).toHaveLength(1);
  });

  it("publishes two accounts' byte-identical batches once each; each account's retry is its own duplicate", async () => {
    const { a, b } = h.tenants;
    const batch = [event(), event()];
    const body = JSON.stringify({ batch });
    const send = (writeKey: string) =>
      collect(h.app).set('X-Write-Key', writeKey).set('Content-Type', 'application/json').send(body);
    const answer = ({ status, body: { deduplicated, batchId } }: request.Response) => ({
      status,
      deduplicated,
      batchId,
    });

    const firstA = answer(await send(a.openWriteKey));
    const againA = answer(await send(a.openWriteKey));
    // A's batch, first and retried, is no duplicate of anything of B's.
    const firstB = answer(await send(b.openWriteKey));
    const againB = answer(await send(b.openWriteKey));
    expect(firstA).toEqual({
      status: 202,
      deduplicated: false,
      batchId: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(firstB).toEqual({
      status: 202,
      deduplicated: false,
      batchId: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(firstB.batchId).not.toBe(firstA.batchId);
    expect(againA).toEqual({ ...firstA, deduplicated: true });
    expect(againB).toEqual({ ...firstB, deduplicated: true });

    const ids = batch.map((e) => e.messageId);
    const copies = (await h.readTopic())
      .filter((e) => ids.includes(e.event.messageId))
      .map((e) => `${e.accountId} ${e.batchId} ${e.event.messageId}`)
      .sort();
    expect(copies).toEqual(
      [
        `${a.accountId} ${firstA.batchId} ${ids[0]}`,
        `${a.accountId} ${firstA.batchId} ${ids[1]}`,
        `${b.accountId} ${firstB.batchId} ${ids[0]}`,
        `${b.accountId} ${firstB.batchId} ${ids[1]}`,
      ].sort(),
    );
  });

  it("refuses A's revoked key once its cache entry expires, while B's cached key keeps working", async () => {
    const { a, b } = h.tenants;
    const api = h.controlPlane.as(a.apiKey);
    const doomed = (await api.post('/api/v1/write-keys').send({ name: 'revoked while cached' })).body
      .data as {
      id: string;
      key: string;
    };
    const sent = { a: [event(), event()], b: [event(), event()] };
    const send = (writeKey: string, body: object) => collect(h.app).set('X-Write-Key', writeKey).send(body);
    expect((await send(doomed.key, sent.a[0]!)).status).toBe(202);
    expect((await send(b.openWriteKey, sent.b[0]!)).status).toBe(202);
    expect((await api.delete(`/api/v1/write-keys/${doomed.id}`)).status).toBe(200);

    // No revocation is heard here: the cache keeps a valid key until the bound, and not past it.
    cacheMs += UNSUBSCRIBED_MAX_TTL_MS - 1;
    expect((await send(doomed.key, sent.a[1]!)).status).toBe(202);
    cacheMs += 1;
    const refused = await send(doomed.key, event());
    expect([refused.status, refused.body]).toEqual([401, { ok: false, error: 'invalid_write_key' }]);
    const kept = await send(b.openWriteKey, sent.b[1]!);
    expect([kept.status, kept.body.deduplicated]).toEqual([202, false]);

    const ids = [...sent.a, ...sent.b].map((e) => e.messageId);
    const published = (await h.readTopic())
      .filter((e) => ids.includes(e.event.messageId))
      .map((e) => `${e.accountId} ${e.event.messageId}`)
      .sort();
    expect(published).toEqual(
      [
        ...sent.a.map((e) => `${a.accountId} ${e.messageId}`),
        ...sent.b.map((e) => `${b.accountId} ${e.messageId}`),
      ].sort(),
    );
  });

  it.each([
    ['an empty body', '', 'invalid_payload'],
    ['malformed JSON', '{"type":', 'invalid_payload'],
    ['a JSON array', '[1,2]', 'invalid_payload'],
    ['a JSON string', '"hello"', 'invalid_payload'],
    ['batch that is not an array', '{"batch":{}}', 'invalid_batch'],
    ['an empty batch', '{"batch":[]}', 'invalid_batch'],
    ['a malformed batch sentAt', '{"sentAt":"now","batch":[{}]}', 'invalid_batch'],
  ])('answers 400 for %s', async (_name, body, code) => {
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .set('Content-Type', 'application/json')
      .send(body);
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ ok: false, error: code, details: expect.any(Array) });
  });

  it('answers 400 no_valid_events with every event’s errors', async () => {
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: [{ type: 'track' }, 'nope'] });
    expect(response.status).toBe(400);
    expect(response.body.error).toBe('no_valid_events');
    expect(response.body.details.map((d: { index: number }) => d.index)).toEqual([0, 1]);
  });

  it('accepts a batch of exactly 100 events', async () => {
    const response = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: Array.from({ length: 100 }, () => event()) });
    expect(response.status).toBe(202);
    expect(response.body).toMatchObject({ ok: true, received: 100, invalid: 0, accepted: true });
  });

  it('accepts an event of exactly 32,768 bytes and refuses one of 32,769, naming both sizes', async () => {
    const sized = (bytes: number) => {
      const empty = event({ properties: { pad: '' } });
      const pad = 'x'.repeat(bytes - Buffer.byteLength(JSON.stringify(empty), 'utf8'));
      const sizedEvent = { ...empty, properties: { pad } };
      expect(Buffer.byteLength(JSON.stringify(sizedEvent), 'utf8')).toBe(bytes);
      return sizedEvent;
    };
    const atLimit = await collect(h.app).set('X-Write-Key', h.openWriteKey).send(sized(32_768));
    expect(atLimit.status).toBe(202);
    expect(atLimit.body).toMatchObject({ ok: true, received: 1, invalid: 0, accepted: true });
    const over = await collect(h.app).set('X-Write-Key', h.openWriteKey).send(sized(32_769));
    expect(over.status).toBe(400);
    expect(over.body).toMatchObject({
      ok: false,
      error: 'no_valid_events',
      details: [{ index: 0, errors: [{ message: 'event is 32769 bytes; at most 32768 are accepted' }] }],
    });
  });

  it('answers 413 batch_too_large above 100 events and 413 payload_too_large above 2 MB', async () => {
    const tooMany = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: Array.from({ length: 101 }, () => event()) });
    expect(tooMany.status).toBe(413);
    expect(tooMany.body).toMatchObject({ ok: false, error: 'batch_too_large' });
    const huge = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024 + 10) }));
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ ok: false, error: 'payload_too_large' });
  });

  it('answers 401 missing_write_key and invalid_write_key (unknown and revoked keys)', async () => {
    expect((await collect(h.app).send(event())).body).toMatchObject({
      ok: false,
      error: 'missing_write_key',
    });
    const unknown = await collect(h.app).set('X-Write-Key', 'wk_unknown').send(event());
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({ ok: false, error: 'invalid_write_key' });
    const api = h.controlPlane.as(h.apiKey);
    const created = (await api.post('/api/v1/write-keys').send({ name: 'to revoke' })).body.data;
    await api.delete(`/api/v1/write-keys/${created.id}`);
    expect((await collect(h.app).set('X-Write-Key', created.key).send(event())).status).toBe(401);
  });

  it('answers 401 invalid_write_key, not 503, to keys too long or odd to be keys, and logs no outage', async () => {
    const logged = h.logs.length;
    for (const key of ['wk_' + 'a'.repeat(198), 'wk_' + 'a'.repeat(5000), 'wk_ with spaces', 'wk_clé']) {
      const response = await collect(h.app).send({ ...event(), writeKey: key });
      expect([key.length, response.status, response.body]).toEqual([
        key.length,
        401,
        { ok: false, error: 'invalid_write_key' },
      ]);
    }
    expect(h.logs.slice(logged).filter((line) => line.includes('control plane unavailable'))).toEqual([]);
  });

  it('reads the write key from X-Write-Key, then Authorization: Bearer, then the body', async () => {
    const send = (headers: Record<string, string>, body: object) => collect(h.app).set(headers).send(body);
    expect(
      (
        await send(
          { 'X-Write-Key': h.openWriteKey, Authorization: 'Bearer wk_bad' },
          event({ writeKey: 'wk_bad' }),
        )
      ).status,
    ).toBe(202);
    expect(
      (await send({ 'X-Write-Key': 'wk_bad', Authorization: `Bearer ${h.openWriteKey}` }, event())).status,
    ).toBe(401);
    expect(
      (await send({ Authorization: `Bearer ${h.openWriteKey}` }, event({ writeKey: 'wk_bad' }))).status,
    ).toBe(202);
    expect((await send({ Authorization: 'Bearer wk_bad' }, event({ writeKey: h.openWriteKey }))).status).toBe(
      401,
    );
    expect((await send({}, { writeKey: h.openWriteKey, batch: [event()] })).status).toBe(202);
  });

  it('enforces allowed origins: listed host and subdomains pass, others and a missing Origin get 403', async () => {
    const send = (o?: string) => {
      const test = collect(h.app).set('X-Write-Key', h.writeKey);
      return (o ? test.set('Origin', o) : test).send(event());
    };
    expect((await send('https://example.com')).status).toBe(202);
    expect((await send('https://a.b.example.com')).status).toBe(202);
    expect((await send('https://example.com.evil.io')).body).toEqual({
      ok: false,
      error: 'origin_not_allowed',
    });
    expect((await send()).status).toBe(403);
    expect((await send('null')).status).toBe(403);
  });

  it('takes text/plain bodies (sendBeacon) and answers CORS preflights for any site', async () => {
    const beacon = await collect(h.app)
      .set('Content-Type', 'text/plain;charset=UTF-8')
      .send(JSON.stringify({ writeKey: h.openWriteKey, batch: [event()] }));
    expect(beacon.status).toBe(202);
    const preflight = await request(h.app)
      .options('/collect')
      .set('Origin', 'https://any-site.example')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'content-type,x-write-key');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-origin']).toBe('*');
    expect(preflight.headers['access-control-allow-headers']).toMatch(/X-Write-Key/i);
    expect(beacon.headers['access-control-allow-origin']).toBe('*');
    expect(beacon.headers['access-control-expose-headers']).toMatch(/Retry-After/);
    expect(beacon.headers['x-request-id']).toBeTruthy();
  });

  it('decodes gzip and deflate bodies, refuses other encodings with 400 invalid_payload, and a bomb with 413', async () => {
    const body = JSON.stringify({ writeKey: h.openWriteKey, batch: [event()] });
    for (const [encoding, encode] of [
      ['gzip', gzipSync],
      ['deflate', deflateSync],
    ] as const) {
      const response = await collect(h.app)
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', encoding)
        .serialize((raw: Buffer) => raw)
        .send(encode(body));
      expect(response.status).toBe(202);
    }
    const unknown = await collect(h.app)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'compress')
      .send(body);
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ ok: false, error: 'invalid_payload' });
    // Small on the wire, over 2 MB once decoded: the limit applies to the decoded body.
    const bomb = await collect(h.app)
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .serialize((raw: Buffer) => raw)
      .send(gzipSync(JSON.stringify({ pad: 'x'.repeat(3 * 1024 * 1024) })));
    expect(bomb.status).toBe(413);
    expect(bomb.body).toMatchObject({ ok: false, error: 'payload_too_large' });
  });

  async function recordsInTopic(): Promise<number> {
    const admin = h.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(h.topic);
    await admin.disconnect();
    return offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  }

  it("reports the outbox and per-consumer-group lag on the metrics port's /health", async () => {
    // A kind no consumer has run yet has no group at the broker: not reported.
    expect((await request(h.metricsApp).get('/health')).body.delivery).toEqual({});
    const admin = h.kafka.admin();
    await admin.connect();
    const offsets = await admin.fetchTopicOffsets(h.topic);
    await admin.setOffsets({
      groupId: h.healthGroup,
      topic: h.topic,
      partitions: offsets.map((p) => ({ partition: p.partition, offset: p.low })),
    });
    await admin.disconnect();
    const response = await request(h.metricsApp).get('/health');
    expect(response.status).toBe(200);
    // Lag counts Kafka records not yet committed by the group (one record per request).
    const lag = await recordsInTopic();
    expect(response.body).toEqual({
      ok: true,
      durableIngest: true,
      deliveryHealthy: lag <= 1000,
      delivery: { log: { groupId: expect.any(String), lag, healthy: lag <= 1000 } },
    });
  });
});
