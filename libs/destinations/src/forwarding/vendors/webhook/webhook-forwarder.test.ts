import { WebhookForwarder } from './webhook-forwarder';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import { bulkyEvents, oneOfEachType, sampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';
import { signWebhookBody, verifyWebhookSignature, webhookHeaders } from './webhook-signature';

describe('webhook signature', () => {
  const body = '{"batch":[]}';
  const now = new Date('2026-03-01T12:00:00Z');
  const timestamp = String(Math.floor(now.getTime() / 1000));
  const signature = signWebhookBody('s3cret', Number(timestamp), body);

  it('is sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">', () => {
    // Computed independently: printf '1772366400.{"batch":[]}' | openssl dgst -sha256 -hmac s3cret
    expect(signature).toBe('sha256=cc3dab85cbd5817ccea24545129e24f76c5abcaf14624d237a41c56a10fcd260');
  });

  it('verifies with the secret, and fails with another secret, another body or a moved timestamp', () => {
    expect(verifyWebhookSignature({ secret: 's3cret', body, timestamp, signature, now })).toBe(true);
    expect(verifyWebhookSignature({ secret: 'other', body, timestamp, signature, now })).toBe(false);
    expect(verifyWebhookSignature({ secret: 's3cret', body: `${body} `, timestamp, signature, now })).toBe(
      false,
    );
    expect(
      verifyWebhookSignature({
        secret: 's3cret',
        body,
        timestamp: String(Number(timestamp) + 1),
        signature,
        now,
      }),
    ).toBe(false);
  });

  it('refuses a replay outside the tolerance, even with a valid signature', () => {
    const later = new Date(now.getTime() + 301_000);
    expect(verifyWebhookSignature({ secret: 's3cret', body, timestamp, signature, now: later })).toBe(false);
    expect(
      verifyWebhookSignature({
        secret: 's3cret',
        body,
        timestamp,
        signature,
        now: later,
        toleranceSeconds: 600,
      }),
    ).toBe(true);
    expect(verifyWebhookSignature({ secret: 's3cret', body, timestamp: undefined, signature, now })).toBe(
      false,
    );
  });
});

describe('webhook forwarder (signature-checking receiver)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('webhook');
    forwarder = new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'] }));
  });
  afterEach(() => server.close());

  it('posts every event type as a Segment-spec batch, signed', async () => {
    const events = Object.values(oneOfEachType());
    const before = Math.floor(Date.now() / 1000);
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    const after = Math.floor(Date.now() / 1000);
    expect(outcome).toEqual({ sent: 6, requests: 1, skipped: [] });
    expect(events.map((e) => e.event.type)).toEqual([
      'track',
      'page',
      'identify',
      'group',
      'alias',
      'screen',
    ]);
    const [request] = server.requests;
    expect(request?.path).toBe('/hooks/events');
    expect(request?.headers['content-type']).toBe('application/json');
    const timestamp = request?.headers[webhookHeaders.timestamp.toLowerCase()] as string;
    // Signed when sent: in whole seconds, between a read before the send and one after it.
    expect(Number(timestamp)).toBeGreaterThanOrEqual(before);
    expect(Number(timestamp)).toBeLessThanOrEqual(after);
    expect(request?.headers[webhookHeaders.signature.toLowerCase()]).toBe(
      signWebhookBody('whsec-test-secret', Number(timestamp), request!.body),
    );
    expect(server.accepted.map((a) => [a.item.type, a.item.messageId])).toEqual(
      events.map((e) => [e.event.type, e.event.messageId]),
    );
  });

  it('a receiver with another secret refuses the signature: permanent', async () => {
    await server.close();
    server = await startLookAlikeVendor('webhook', { credentials: { signingSecret: 'another-secret' } });
    const failure = await forwarder
      .send(lookAlikeDestination(server, { credentials: { signingSecret: 'whsec-test-secret' } }), [
        oneOfEachType().track,
      ])
      .catch((e) => e);
    expect(failure).toMatchObject({
      retryable: false,
      status: 401,
      reason: 'webhook: http_401',
      detail: 'invalid signature',
    });
    expect(server.accepted).toHaveLength(0);
  });

  it('the delivery id is the same on every attempt for the same events', async () => {
    server.failNext({ status: 503 });
    const events = [sampleEvent({ type: 'track', event: 'A' }), sampleEvent({ type: 'track', event: 'B' })];
    await forwarder.send(lookAlikeDestination(server), events).catch(() => undefined);
    await forwarder.send(lookAlikeDestination(server), events);
    const ids = server.requests.map((r) => r.headers[webhookHeaders.deliveryId.toLowerCase()]);
    expect(ids[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(ids[1]).toBe(ids[0]);
  });

  it('keeps requests within 100 events and 512 KB', async () => {
    const outcome = await forwarder.send(lookAlikeDestination(server), [
      ...bulkyEvents(30, 25_000),
      ...bulkyEvents(150, 10),
    ]);
    expect(outcome.sent).toBe(180);
    const sizes = server.requests.map((r) => JSON.parse(r.body).batch.length as number);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(180);
    expect(sizes.every((size) => size <= 100)).toBe(true);
    for (const request of server.requests)
      expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(512 * 1024);
    expect(sizes.reduce((a, b) => a + b)).toBe(180);
    expect(sizes.length).toBeGreaterThanOrEqual(3);
  });

  it.each([
    ['loopback', (port: number) => `http://127.0.0.1:${port}/_bulk`],
    ['a name for loopback', (port: number) => `http://localhost:${port}/_bulk`],
    ['IPv4-mapped loopback', (port: number) => `http://[::ffff:127.0.0.1]:${port}/_bulk`],
  ])(
    'refuses an internal address (%s) without an operator range, and tells the tenant no more',
    async (_, url) => {
      const guarded = new WebhookForwarder(vendorClientOptions());
      const destination = lookAlikeDestination(server, {
        appConfig: { url: url(Number(new URL(server.url).port)) },
      });
      const failure = await guarded.send(destination, [oneOfEachType().track]).catch((e) => e);
      expect(failure).toMatchObject({ retryable: false, reason: 'webhook: address_refused' });
      expect(failure.undelivered.map((u: { reason: string }) => u.reason)).toEqual(['address_refused']);
      // The address is for the logs only.
      expect(failure.detail).toMatch(/^EGRESS_REFUSED: refused to connect to \S+ \(loopback\)$/);
      expect(server.requests).toHaveLength(0);
    },
  );

  it('does not follow redirects: the data goes to the configured URL or nowhere', async () => {
    const redirecting = createServer((_req, res) => {
      res.writeHead(307, { Location: server.url });
      res.end();
    });
    await new Promise<void>((resolve) => redirecting.listen(0, '127.0.0.1', resolve));
    const { port } = redirecting.address() as AddressInfo;
    const destination = lookAlikeDestination(server, {
      appConfig: { url: `http://127.0.0.1:${port}/` },
    });
    const failure = await forwarder.send(destination, [oneOfEachType().track]).catch((e) => e);
    await new Promise((resolve) => redirecting.close(resolve));
    expect(failure).toMatchObject({
      retryable: false,
      status: 307,
      reason: 'webhook: redirect_not_followed: http_307',
    });
    expect(server.requests).toHaveLength(0);
  });

  it('needs a url and a signing secret', async () => {
    const noUrl = lookAlikeDestination(server, { appConfig: {} });
    await expect(forwarder.send(noUrl, [oneOfEachType().track])).rejects.toMatchObject({
      retryable: false,
      reason: 'webhook: invalid_config: appConfig.url is required',
    });
    const notHttp = lookAlikeDestination(server, { appConfig: { url: 'file:///etc/passwd' } });
    await expect(forwarder.send(notHttp, [oneOfEachType().track])).rejects.toMatchObject({
      reason: 'webhook: invalid_config: the webhook url must be an http(s) URL',
    });
  });

  it('sends an integration’s config.global.url only on the origin of the app’s url', async () => {
    const origin = new URL(server.url).origin;
    const samePath = lookAlikeDestination(server, {
      config: { global: { url: `${origin}/hooks/events?integration=2` }, tasks: [] },
    });
    await expect(forwarder.send(samePath, [oneOfEachType().track])).resolves.toMatchObject({ sent: 1 });
    expect([server.requests.at(-1)?.path, server.requests.at(-1)?.query]).toEqual([
      '/hooks/events',
      { integration: '2' },
    ]);
    // Another port, or the app's host under another name: the signed batch is not sent.
    const seen = server.requests.length;
    for (const elsewhere of [
      `http://127.0.0.1:${Number(new URL(origin).port) + 1}/x`,
      `${origin.replace('127.0.0.1', 'localhost')}/x`,
    ]) {
      const moved = lookAlikeDestination(server, { config: { global: { url: elsewhere }, tasks: [] } });
      await expect(forwarder.send(moved, [oneOfEachType().track])).rejects.toMatchObject({
        retryable: false,
        reason: 'webhook: invalid_config: config.global.url must be on the origin of the app’s url',
      });
    }
    // An override is no URL of its own: without the app's, nothing is sent.
    const bare = lookAlikeDestination(server, {
      appConfig: {},
      config: { global: { url: server.url }, tasks: [] },
    });
    await expect(forwarder.send(bare, [oneOfEachType().track])).rejects.toMatchObject({
      reason: 'webhook: invalid_config: appConfig.url is required',
    });
    expect(server.requests).toHaveLength(seen);
  });
});
