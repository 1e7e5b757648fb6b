import { SegmentForwarder } from './segment-forwarder';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import {
  bulkyEvents,
  correctedSampleTime,
  oneOfEachType,
  sampleEvent,
  sampleTimestamp,
} from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('Segment forwarder (HTTP tracking API look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('segment');
    forwarder = new SegmentForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('sends every event type as a Segment message, without our write key', async () => {
    const events = oneOfEachType();
    const withWriteKey = sampleEvent({
      type: 'track',
      userId: 'user-42',
      event: 'Keyed',
      writeKey: 'OUR-SECRET',
    });
    const outcome = await forwarder.send(lookAlikeDestination(server), [
      ...Object.values(events),
      withWriteKey,
    ]);

    expect(outcome).toEqual({ sent: 7, requests: 1, skipped: [] });
    const [request] = server.requests;
    expect(request?.path).toBe('/v1/batch');
    expect(request?.headers.authorization).toBe(`Basic ${Buffer.from('seg-write-key:').toString('base64')}`);
    expect(server.dropped).toEqual([]);
    expect(request?.body).not.toContain('OUR-SECRET');

    const context = {
      page: {
        url: 'https://shop.example/pricing?x=1',
        path: '/pricing',
        title: 'Pricing',
        referrer: 'https://ref.example/',
      },
      language: 'en-US',
      os: 'macOS',
      ip: '198.51.100.7',
      userAgent: 'Mozilla/5.0 (look-alike)',
    };
    const common = (messageId: string) => ({
      messageId,
      anonymousId: 'anon-1234',
      userId: 'user-42',
      timestamp: correctedSampleTime.toISOString(),
      originalTimestamp: sampleTimestamp,
      receivedAt: '2026-03-01T12:00:00.000Z',
      context,
    });
    expect(server.accepted.slice(0, 6).map((a) => a.item)).toEqual([
      {
        type: 'track',
        event: 'Plan Upgraded',
        properties: { plan: 'pro', seats: 3 },
        ...common(events.track.event.messageId),
      },
      { type: 'page', name: 'Pricing', properties: { variant: 'b' }, ...common(events.page.event.messageId) },
      {
        type: 'identify',
        traits: { email: 'ada@example.com', firstName: 'Ada', plan: 'pro', logins: 7, vip: true },
        ...common(events.identify.event.messageId),
      },
      {
        type: 'group',
        groupId: 'acme',
        traits: { name: 'Acme', seats: 50 },
        ...common(events.group.event.messageId),
      },
      { type: 'alias', previousId: 'anon-1234', ...common(events.alias.event.messageId) },
      { type: 'screen', name: 'Checkout', properties: { step: 2 }, ...common(events.screen.event.messageId) },
    ]);
    expect(JSON.parse(request!.body).sentAt).toEqual(expect.any(String));
  });

  it('keeps batches within 500 KB and each message within 32 KB', async () => {
    const events = bulkyEvents(45, 25_000);
    const tooBig = bulkyEvents(1, 33_000)[0]!;
    const failure = await forwarder.send(lookAlikeDestination(server), [...events, tooBig]).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 45, requests: 3 });
    expect(failure.undelivered).toEqual([
      { event: tooBig, reason: expect.stringMatching(/^event_too_large: /), retryable: false },
    ]);
    for (const request of server.requests)
      expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(500 * 1024);
    expect(server.accepted).toHaveLength(45);
  });

  it('a failure on the third request reports the two batches that went', async () => {
    server.passNext(2);
    server.failNext({ status: 502 });
    const events = bulkyEvents(45, 25_000);
    const failure = await forwarder.send(lookAlikeDestination(server), events).catch((e) => e);
    const perRequest = server.requests.slice(0, 2).map((r) => JSON.parse(r.body).batch.length as number);
    expect(failure).toMatchObject({ retryable: true, status: 502, requests: 3 });
    expect(failure.sent).toBe(perRequest[0]! + perRequest[1]!);
    expect(failure.undelivered.map((u: { event: unknown }) => u.event)).toEqual(events.slice(failure.sent));
  });

  it('sends to a Segment-compatible endpoint of appConfig, https only', async () => {
    const urls: string[] = [];
    const fakeFetch = (async (url: string | URL | Request) => {
      urls.push(String(url));
      return new Response('{"success":true}', { status: 200 });
    }) as typeof fetch;
    const compatible = new SegmentForwarder(vendorClientOptions({ fetch: fakeFetch }));
    await compatible.send(
      lookAlikeDestination(server, { appConfig: { endpoint: 'https://dp.example.com/' } }),
      [oneOfEachType().track],
    );
    await compatible.send(lookAlikeDestination(server), [oneOfEachType().track]);
    expect(urls).toEqual(['https://dp.example.com/v1/batch', 'https://api.segment.io/v1/batch']);

    const failure = await compatible
      .send(lookAlikeDestination(server, { appConfig: { endpoint: 'http://dp.example.com' } }), [
        oneOfEachType().track,
      ])
      .catch((e) => e);
    expect(failure.reason).toBe('segment: invalid_config: appConfig.endpoint must be an https URL');
  });
});
