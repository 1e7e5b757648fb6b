import { OneSignalForwarder } from './onesignal-forwarder';
import { uuidOf } from '../../dedupe-keys';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import { bulkyEvents, correctedSampleTime, oneOfEachType, sampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

const appId = '5eb5a37e-b458-11e3-ac11-000c2940e62c';

describe('OneSignal forwarder (user update and custom events look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('onesignal');
    forwarder = new OneSignalForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('sets tags on identify first, then sends track, page and screen as custom events; group and alias are skipped', async () => {
    const events = oneOfEachType();
    const outcome = await forwarder.send(lookAlikeDestination(server), Object.values(events));

    expect(outcome).toMatchObject({ sent: 4, requests: 2 });
    expect(outcome.skipped.map((s) => s.reason.split(':')[0])).toEqual([
      'group_not_supported',
      'alias_not_supported',
    ]);
    expect(server.requests.map((r) => `${r.method} ${r.path}`)).toEqual([
      `PATCH /apps/${appId}/users/by/external_id/user-42`,
      `POST /apps/${appId}/custom_events`,
    ]);
    for (const request of server.requests) expect(request.headers.authorization).toBe('Key os-app-key');

    const common = { external_id: 'user-42', timestamp: correctedSampleTime.toISOString() };
    expect(server.accepted).toEqual([
      {
        endpoint: 'update_user',
        item: {
          alias_label: 'external_id',
          alias_id: 'user-42',
          properties: {
            tags: { email: 'ada@example.com', firstName: 'Ada', plan: 'pro', logins: '7', vip: 'true' },
            language: 'en',
          },
        },
      },
      {
        endpoint: 'custom_events',
        item: {
          ...common,
          idempotency_key: uuidOf(events.track.event.messageId),
          name: 'Plan Upgraded',
          properties: { plan: 'pro', seats: 3 },
        },
      },
      {
        endpoint: 'custom_events',
        item: {
          ...common,
          idempotency_key: uuidOf(events.page.event.messageId),
          name: 'Page Viewed',
          properties: {
            name: 'Pricing',
            url: 'https://shop.example/pricing?x=1',
            path: '/pricing',
            title: 'Pricing',
            referrer: 'https://ref.example/',
            variant: 'b',
          },
        },
      },
      {
        endpoint: 'custom_events',
        item: {
          ...common,
          idempotency_key: uuidOf(events.screen.event.messageId),
          name: 'Screen Viewed',
          properties: { name: 'Checkout', step: 2 },
        },
      },
    ]);
  });

  it('idempotency keys are UUIDs: the messageId when it is one, else derived from it, stable', () => {
    expect(uuidOf('7C9E6679-7425-40DE-944B-E07FC1F90AE7')).toBe('7c9e6679-7425-40de-944b-e07fc1f90ae7');
    const derived = uuidOf('msg-000001');
    expect(derived).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(uuidOf('msg-000001')).toBe(derived);
    expect(uuidOf('msg-000002')).not.toBe(derived);
  });

  it('leaves nested traits out of tags and skips anonymous events', async () => {
    const identify = sampleEvent({
      type: 'identify',
      userId: 'u-1',
      traits: { plan: 'pro', address: { city: 'Oslo' }, tags: ['a'] },
    });
    const anonymous = sampleEvent({ type: 'track', event: 'Viewed' });
    const outcome = await forwarder.send(lookAlikeDestination(server), [identify, anonymous]);
    expect(outcome.skipped).toEqual([
      { messageId: anonymous.event.messageId, reason: expect.stringMatching(/^anonymous: /) },
    ]);
    expect(server.accepted[0]?.item.properties).toEqual({ tags: { plan: 'pro' } });
  });

  it('an event over 2024 bytes fails alone; requests stay within 1 MB', async () => {
    const small = bulkyEvents(600, 1800);
    const tooBig = bulkyEvents(1, 2100)[0]!;
    const failure = await forwarder.send(lookAlikeDestination(server), [tooBig, ...small]).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 600, requests: 2 });
    expect(failure.undelivered).toEqual([
      { event: tooBig, reason: expect.stringMatching(/^event_too_large: /), retryable: false },
    ]);
    for (const request of server.requests)
      expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(1_000_000);
  });

  it('202 with errors: only the failed events are undelivered, retryable (the user may exist later)', async () => {
    server.rejectItems((event) => event.external_id === 'ghost', 'User not found');
    const events = [
      sampleEvent({ type: 'track', userId: 'u-1', event: 'Booked' }),
      sampleEvent({ type: 'track', userId: 'ghost', event: 'Booked' }),
    ];
    const failure = await forwarder.send(lookAlikeDestination(server), events).catch((e) => e);
    expect(failure).toMatchObject({ retryable: true, sent: 1, requests: 1, status: 202 });
    expect(failure.undelivered).toEqual([
      { event: events[1], reason: 'event_failed: User not found', retryable: true },
    ]);
    expect(server.accepted.map((a) => a.item.external_id)).toEqual(['u-1']);
  });

  it('a failed user update does not stop the custom events', async () => {
    server.failNext({ status: 400, body: { errors: [{ code: 'invalid', title: 'bad tag' }] } });
    const events = [
      sampleEvent({ type: 'identify', userId: 'u-1', traits: { plan: 'pro' } }),
      sampleEvent({ type: 'track', userId: 'u-1', event: 'Booked' }),
    ];
    const failure = await forwarder.send(lookAlikeDestination(server), events).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 1, requests: 2 });
    expect(failure.undelivered.map((u: { event: unknown }) => u.event)).toEqual([events[0]]);
    expect(server.accepted.map((a) => a.endpoint)).toEqual(['custom_events']);
  });
});
