import { AmplitudeForwarder } from './amplitude-forwarder';
import { DeliveryFailure } from '../../delivery-failure';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import { bulkyEvents, correctedSampleTime, oneOfEachType, sampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('Amplitude forwarder (HTTP V2 look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('amplitude');
    forwarder = new AmplitudeForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('maps every event type to the documented payload; alias is skipped with its reason', async () => {
    const events = oneOfEachType();
    const outcome = await forwarder.send(lookAlikeDestination(server), Object.values(events));

    expect(outcome.sent).toBe(5);
    expect(outcome.skipped).toEqual([
      { messageId: events.alias.event.messageId, reason: expect.stringMatching(/^alias_not_supported: /) },
    ]);
    const [request] = server.requests;
    expect(request?.path).toBe('/2/httpapi');
    expect(request?.headers['content-type']).toBe('application/json');
    const body = JSON.parse(request!.body);
    expect(body.api_key).toBe('amp-test-key');
    expect(body.options).toEqual({ min_id_length: 1 });

    const common = {
      user_id: 'user-42',
      device_id: 'anon-1234',
      time: correctedSampleTime.getTime(),
      ip: '198.51.100.7',
      platform: 'Web',
      os_name: 'macOS',
      language: 'en-US',
    };
    expect(server.accepted.map((a) => a.item)).toEqual([
      {
        ...common,
        insert_id: events.track.event.messageId,
        event_type: 'Plan Upgraded',
        event_properties: { plan: 'pro', seats: 3 },
      },
      {
        ...common,
        insert_id: events.page.event.messageId,
        event_type: 'Page Viewed',
        event_properties: {
          name: 'Pricing',
          url: 'https://shop.example/pricing?x=1',
          path: '/pricing',
          title: 'Pricing',
          referrer: 'https://ref.example/',
          variant: 'b',
        },
      },
      {
        ...common,
        insert_id: events.identify.event.messageId,
        event_type: '$identify',
        user_properties: {
          $set: { email: 'ada@example.com', firstName: 'Ada', plan: 'pro', logins: 7, vip: true },
        },
      },
      {
        ...common,
        insert_id: events.group.event.messageId,
        event_type: '$identify',
        groups: { company: 'acme' },
        user_properties: { $set: { company: 'acme' } },
      },
      {
        ...common,
        insert_id: events.screen.event.messageId,
        event_type: 'Screen Viewed',
        event_properties: { name: 'Checkout', step: 2 },
      },
    ]);
  });

  it('sends anonymous events by device_id, a numeric session id as session_id, revenue as revenue', async () => {
    const event = sampleEvent({
      type: 'track',
      event: 'Order Completed',
      sessionId: '1772366399000',
      properties: { revenue: 12.5 },
    });
    await forwarder.send(lookAlikeDestination(server), [event]);
    const [accepted] = server.accepted;
    expect(accepted?.item).toMatchObject({
      device_id: 'anon-1234',
      session_id: 1772366399000,
      revenue: 12.5,
    });
    expect(accepted?.item).not.toHaveProperty('user_id');
  });

  it('uses the group type of the integration config', async () => {
    const destination = lookAlikeDestination(server, { config: { global: { groupType: 'org' }, tasks: [] } });
    await forwarder.send(destination, [oneOfEachType().group]);
    expect(server.accepted[0]?.item.groups).toEqual({ org: 'acme' });
  });

  it('keeps each request under 1 MB', async () => {
    const events = bulkyEvents(60, 30_000);
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome).toMatchObject({ sent: 60, requests: 2 });
    for (const request of server.requests) expect(Buffer.byteLength(request.body)).toBeLessThan(1_000_000);
    expect(server.requests.map((r) => JSON.parse(r.body).events.length)).toEqual([33, 27]);
  });

  it('413: splits the request in halves and sends both', async () => {
    server.failNext({ status: 413, body: { code: 413, error: 'Payload too large' } });
    const events = bulkyEvents(4, 100);
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome).toMatchObject({ sent: 4, requests: 3 });
    expect(server.requests.map((r) => JSON.parse(r.body).events.length)).toEqual([4, 2, 2]);
  });

  it('400 with invalid events: drops those, resends the others, and reports the dropped as permanent', async () => {
    server.rejectItems(
      (event) => (event.event_properties as { bad?: boolean } | undefined)?.bad === true,
      'event_properties',
    );
    const good = [sampleEvent({ type: 'track', event: 'A' }), sampleEvent({ type: 'track', event: 'B' })];
    const bad = sampleEvent({ type: 'track', event: 'C', properties: { bad: true } });
    const failure = await forwarder
      .send(lookAlikeDestination(server), [good[0]!, bad, good[1]!])
      .catch((e) => e);

    expect(failure).toBeInstanceOf(DeliveryFailure);
    expect(failure).toMatchObject({ retryable: false, sent: 2, requests: 2, status: 400 });
    expect(failure.undelivered).toEqual([
      { event: bad, reason: 'invalid_field: event_properties', retryable: false },
    ]);
    expect(server.requests.map((r) => r.status)).toEqual([400, 200]);
    expect(server.accepted.map((a) => a.item.event_type)).toEqual(['A', 'B']);
  });

  it('429 without Retry-After: waits the 30 s Amplitude asks for', async () => {
    server.failNext({ status: 429 });
    const failure = await forwarder
      .send(lookAlikeDestination(server), [oneOfEachType().track])
      .catch((e) => e);
    expect(failure).toMatchObject({ retryable: true, status: 429, retryAfterMs: 30_000 });
  });

  it('picks the EU host for appConfig.region "eu" and refuses an unknown region', async () => {
    const urls: string[] = [];
    const fakeFetch = (async (url: string | URL | Request) => {
      urls.push(String(url));
      return new Response(JSON.stringify({ code: 200 }), { status: 200 });
    }) as typeof fetch;
    const regional = new AmplitudeForwarder(vendorClientOptions({ fetch: fakeFetch }));
    const destination = lookAlikeDestination(server, { appConfig: { region: 'eu' } });
    await regional.send(destination, [oneOfEachType().track]);
    expect(urls).toEqual(['https://api.eu.amplitude.com/2/httpapi']);

    const failure = await regional
      .send(lookAlikeDestination(server, { appConfig: { region: 'mars' } }), [oneOfEachType().track])
      .catch((e) => e);
    expect(failure).toMatchObject({
      retryable: false,
      reason: expect.stringContaining('invalid_config: appConfig.region'),
    });
  });
});
