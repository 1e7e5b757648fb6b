import fc from 'fast-check';
import request from 'supertest';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';
import { derivedMessageId, segmentRouteOf } from './segment-request';

const basic = (writeKey: string) => `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`;

// Segment's HTTP Tracking API on the hosted pipeline: real Kafka, Redis, PostgreSQL and a
// control plane, as on /collect.
describe('Segment-compatible tracking API, hosted mode', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('segment api', {
      backstopEps: 1_000_000,
      publicTrackingUrl: 'https://track.example.com',
    });
  });
  afterAll(() => h.close());

  const post = (path: string, writeKey = h.openWriteKey) =>
    request(h.app).post(path).set('Authorization', basic(writeKey)).set('Content-Type', 'application/json');

  it('takes every single-event route with only a userId, filling messageId and timestamp', async () => {
    const bodies: [string, Record<string, unknown>][] = [
      ['/v1/track', { userId: 'seg-u1', event: 'Signed Up', properties: { plan: 'pro' } }],
      ['/v1/identify', { userId: 'seg-u1', traits: { email: 'a@example.com' } }],
      ['/v1/page', { userId: 'seg-u1', name: 'Home', properties: { path: '/' } }],
      ['/v1/screen', { userId: 'seg-u1', name: 'Checkout' }],
      ['/v1/group', { userId: 'seg-u1', groupId: 'acme', traits: { seats: 5 } }],
      ['/v1/alias', { userId: 'seg-u1', previousId: 'anon-9' }],
    ];
    const before = Date.now();
    for (const [path, body] of bodies) {
      const response = await post(path).send(body);
      expect([path, response.status, response.body]).toEqual([path, 200, { success: true }]);
    }
    const committed = (await h.readTopic()).filter((c) => c.event.userId === 'seg-u1');
    expect(committed.map((c) => c.event.type).sort()).toEqual(
      ['alias', 'group', 'identify', 'page', 'screen', 'track'].sort(),
    );
    for (const { event: e } of committed) {
      expect(e.anonymousId).toBeUndefined();
      expect(e.messageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(Date.parse(e.timestamp)).toBeGreaterThanOrEqual(before - 1000);
    }
    // The same message retried gets the same id: the warehouse keeps one row.
    const { messageId: _m, ...track } = committed.find((c) => c.event.type === 'track')!.event;
    expect(derivedMessageId({ userId: 'seg-u1', event: 'Signed Up', properties: { plan: 'pro' } })).toBe(
      committed.find((c) => c.event.type === 'track')!.event.messageId,
    );
    expect(track).toMatchObject({ type: 'track', event: 'Signed Up', properties: { plan: 'pro' } });
  });

  it("publishes two accounts' identical messages once each; each account's retry is its own duplicate", async () => {
    const { a, b } = h.tenants;
    const userId = `seg-dup-${Date.now()}-${Math.random()}`;
    // No messageId: both accounts' messages get the same derived id.
    const body = { userId, event: 'Retried', properties: { attempt: 1 } };
    for (const writeKey of [a.openWriteKey, a.openWriteKey, b.openWriteKey, b.openWriteKey]) {
      const response = await post('/v1/track', writeKey).send(body);
      expect([response.status, response.body]).toEqual([200, { success: true }]);
    }
    const id = derivedMessageId(body);
    const committed = (await h.readTopic())
      .filter((c) => c.event.userId === userId)
      .map((c) => `${c.accountId} ${c.event.messageId}`)
      .sort();
    expect(committed).toEqual([`${a.accountId} ${id}`, `${b.accountId} ${id}`].sort());
  });

  it('takes a batch with batch-level context and integrations, the message’s own keys winning', async () => {
    const response = await post('/v1/batch').send({
      batch: [
        { type: 'track', userId: 'seg-b1', event: 'A', messageId: 'seg-b1-a', context: { locale: 'fr-FR' } },
        {
          type: 'track',
          anonymousId: 'anon-b1',
          event: 'B',
          messageId: 'seg-b1-b',
          originalTimestamp: '2026-01-02T03:04:05.000Z',
          integrations: { Amplitude: true },
        },
      ],
      context: { library: { name: 'analytics-python', version: '2.3.0' }, locale: 'en-US' },
      integrations: { All: false },
      sentAt: new Date().toISOString(),
    });
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ success: true });
    const committed = (await h.readTopic()).filter((c) => c.event.messageId.startsWith('seg-b1-'));
    const a = committed.find((c) => c.event.messageId === 'seg-b1-a')!.event;
    const b = committed.find((c) => c.event.messageId === 'seg-b1-b')!.event;
    expect(a.context).toEqual({ library: { name: 'analytics-python', version: '2.3.0' }, locale: 'fr-FR' });
    expect(a.integrations).toEqual({ All: false });
    expect(b.integrations).toEqual({ All: false, Amplitude: true });
    // No timestamp: the message's originalTimestamp, kept beside it.
    expect(b).toMatchObject({
      timestamp: '2026-01-02T03:04:05.000Z',
      originalTimestamp: '2026-01-02T03:04:05.000Z',
    });
  });

  it('answers an unknown key 401 and no key 401, Segment-style, which the libraries do not retry', async () => {
    const unknown = await post('/v1/track', 'wk_not_a_key').send({ userId: 'u', event: 'E' });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toEqual({
      success: false,
      code: 'invalid_write_key',
      message: 'The write key does not match',
    });
    const none = await request(h.app).post('/v1/track').send({ userId: 'u', event: 'E' });
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('missing_write_key');
    // The body's writeKey and our own header work too.
    expect(
      (await request(h.app).post('/v1/track').send({ userId: 'u', event: 'E', writeKey: h.openWriteKey }))
        .status,
    ).toBe(200);
    expect(
      (
        await request(h.app)
          .post('/v1/t')
          .set('X-Write-Key', h.openWriteKey)
          .send({ userId: 'u', event: 'E' })
      ).status,
    ).toBe(200);
  });

  it('refuses a 33 KB event by its index and commits the others', async () => {
    const response = await post('/v1/batch').send({
      batch: [
        { type: 'track', userId: 'seg-big', event: 'Small', messageId: 'seg-big-0' },
        {
          type: 'track',
          userId: 'seg-big',
          event: 'Big',
          messageId: 'seg-big-1',
          properties: { blob: 'x'.repeat(33 * 1024) },
        },
        { type: 'track', event: 'Nobody', messageId: 'seg-big-2' },
      ],
    });
    expect(response.status).toBe(200);
    expect(response.body.success).toBe(true);
    expect(response.body.errors).toEqual([
      {
        index: 1,
        errors: [{ message: expect.stringMatching(/^event is \d+ bytes; at most 32768 are accepted$/) }],
      },
      { index: 2, errors: [{ message: 'userId or anonymousId is required' }] },
    ]);
    const committed = (await h.readTopic()).filter((c) => c.event.messageId.startsWith('seg-big-'));
    expect(committed.map((c) => c.event.messageId)).toEqual(['seg-big-0']);
  });

  it('answers 400 when no event is valid, and 413 above 500 KB', async () => {
    const invalid = await post('/v1/track').send({ event: 'Nobody' });
    expect(invalid.status).toBe(400);
    expect(invalid.body).toMatchObject({
      success: false,
      code: 'no_valid_events',
      details: [{ index: 0, errors: [{ message: 'userId or anonymousId is required' }] }],
    });
    const huge = await post('/v1/batch').send({
      batch: Array.from({ length: 20 }, (_, i) => ({
        type: 'track',
        userId: 'u',
        event: 'E',
        properties: { i, blob: 'y'.repeat(26 * 1024) },
      })),
    });
    expect(huge.status).toBe(413);
    expect(huge.body).toMatchObject({ success: false, code: 'payload_too_large' });
  });

  it('keeps /collect’s contract: anonymousId required, no screen type, integrations accepted', async () => {
    const userOnly = await collect(h.app).set('X-Write-Key', h.openWriteKey).send({
      type: 'track',
      event: 'E',
      userId: 'u',
      messageId: 'c-1',
      timestamp: new Date().toISOString(),
    });
    expect(userOnly.status).toBe(400);
    expect(userOnly.body.details).toEqual([{ index: 0, errors: [{ message: 'anonymousId is required' }] }]);
    const screen = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send(event({ type: 'screen', name: 'S' }));
    expect(screen.status).toBe(400);
    expect(screen.body.details[0].errors[0].message).toBe(
      'type must be one of track, identify, page, group, alias',
    );
    const chosen = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .send(event({ messageId: 'c-integrations', integrations: { All: false, Mixpanel: true } }));
    expect(chosen.status).toBe(202);
    const committed = (await h.readTopic()).find((c) => c.event.messageId === 'c-integrations');
    expect(committed?.event.integrations).toEqual({ All: false, Mixpanel: true });
  });

  it('serves the browser library’s settings for a known key, pointing it at this host', async () => {
    const response = await request(h.app)
      .get(`/v1/projects/${h.openWriteKey}/settings`)
      .set('X-Forwarded-Proto', 'https')
      .set('Host', 'track.example.com');
    expect(response.status).toBe(200);
    expect(response.headers['access-control-allow-origin']).toBe('*');
    expect(response.body.integrations).toEqual({
      'Segment.io': {
        apiKey: h.openWriteKey,
        apiHost: 'track.example.com/v1',
        protocol: 'https',
        unbundledIntegrations: [],
        addBundledMetadata: false,
        maybeBundledConfigIds: {},
      },
    });
    expect(response.body.metrics).toEqual({ sampleRate: 0 });
    expect((await request(h.app).get('/v1/projects/wk_unknown/settings')).status).toBe(401);
  });

  it('lets any request header through a preflight (the browser library sends X-Retry-Count)', async () => {
    const preflight = await request(h.app)
      .options('/v1/t')
      .set('Origin', 'https://shop.example')
      .set('Access-Control-Request-Method', 'POST')
      .set('Access-Control-Request-Headers', 'authorization,content-type,x-retry-count');
    expect(preflight.status).toBe(204);
    expect(preflight.headers['access-control-allow-headers']).toBe(
      'authorization,content-type,x-retry-count',
    );
  });

  it('knows its routes', () => {
    expect(segmentRouteOf('POST', '/v1/batch')).toBe('batch');
    expect(segmentRouteOf('POST', '/v1/b?x=1')).toBe('batch');
    expect(segmentRouteOf('POST', '/v1/s/')).toBe('screen');
    expect(segmentRouteOf('GET', '/v1/track')).toBeUndefined();
    expect(segmentRouteOf('POST', '/v1/toString')).toBeUndefined();
    expect(segmentRouteOf('POST', '/v1/sdk.js')).toBeUndefined();
  });

  it('never answers 5xx to arbitrary bodies on any route (fast-check)', async () => {
    const routes = [
      'batch',
      'b',
      'import',
      'track',
      't',
      'identify',
      'i',
      'page',
      'p',
      'screen',
      's',
      'group',
      'g',
      'alias',
      'a',
    ];
    const message = fc.record(
      {
        type: fc.constantFrom('track', 'page', 'screen', 'identify', 'group', 'alias', 'x'),
        userId: fc.oneof(fc.string(), fc.constant(null), fc.integer()),
        anonymousId: fc.string(),
        messageId: fc.oneof(fc.string(), fc.constant(null)),
        timestamp: fc.oneof(
          fc.string(),
          fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        ),
        originalTimestamp: fc.string(),
        event: fc.string({ unit: 'grapheme' }),
        integrations: fc.jsonValue(),
        context: fc.jsonValue(),
        properties: fc.dictionary(fc.string({ unit: 'grapheme' }), fc.jsonValue()),
      },
      { requiredKeys: [] },
    );
    const body = fc.oneof(
      fc.json(),
      fc.string({ unit: 'grapheme' }),
      message.map((m) => JSON.stringify(m)),
      fc
        .record(
          {
            batch: fc.oneof(fc.array(message, { maxLength: 4 }), fc.jsonValue()),
            context: fc.jsonValue(),
            integrations: fc.jsonValue(),
            sentAt: fc.jsonValue(),
          },
          { requiredKeys: [] },
        )
        .map((b) => JSON.stringify(b)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...routes),
        body,
        fc.constantFrom('valid', 'wk_nope', ''),
        async (route, text, key) => {
          let test = request(h.app).post(`/v1/${route}`).set('Content-Type', 'application/json');
          if (key !== '') test = test.set('Authorization', basic(key === 'valid' ? h.openWriteKey : key));
          const response = await test.send(text);
          expect(response.status).toBeLessThan(500);
          expect(typeof response.body.success).toBe('boolean');
        },
      ),
      { numRuns: 300 },
    );
    expect((await request(h.app).get('/health')).status).toBe(200);
  });
});
