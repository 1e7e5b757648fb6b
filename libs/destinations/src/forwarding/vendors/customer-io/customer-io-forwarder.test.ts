import { CustomerIoForwarder } from './customer-io-forwarder';
import { ulidOf } from '../../dedupe-keys';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import { bulkyEvents, correctedSampleTime, oneOfEachType, sampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

const seconds = Math.floor(correctedSampleTime.getTime() / 1000);

describe('Customer.io forwarder (Track v2 batch look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('customer_io');
    forwarder = new CustomerIoForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('maps track, page, screen, identify and group to the documented operations; alias is skipped', async () => {
    const events = oneOfEachType();
    const outcome = await forwarder.send(lookAlikeDestination(server), Object.values(events));

    expect(outcome).toMatchObject({ sent: 5, requests: 1 });
    expect(outcome.skipped).toEqual([
      { messageId: events.alias.event.messageId, reason: expect.stringMatching(/^alias_not_supported: /) },
    ]);
    expect(server.requests[0]?.path).toBe('/api/v2/batch');
    expect(server.requests[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from('cio-site:cio-key').toString('base64')}`,
    );
    const person = { type: 'person', identifiers: { id: 'user-42' } };
    expect(server.accepted.map((a) => a.item)).toEqual([
      {
        ...person,
        action: 'event',
        id: ulidOf(events.track.event.messageId, correctedSampleTime.getTime()),
        name: 'Plan Upgraded',
        timestamp: seconds,
        attributes: { plan: 'pro', seats: 3 },
      },
      {
        ...person,
        action: 'page',
        id: ulidOf(events.page.event.messageId, correctedSampleTime.getTime()),
        name: 'https://shop.example/pricing?x=1',
        timestamp: seconds,
        attributes: {
          name: 'Pricing',
          url: 'https://shop.example/pricing?x=1',
          path: '/pricing',
          title: 'Pricing',
          referrer: 'https://ref.example/',
          variant: 'b',
        },
      },
      {
        ...person,
        action: 'identify',
        timestamp: seconds,
        attributes: { email: 'ada@example.com', firstName: 'Ada', plan: 'pro', logins: 7, vip: true },
      },
      {
        type: 'object',
        identifiers: { object_type_id: '1', object_id: 'acme' },
        action: 'identify',
        attributes: { name: 'Acme', seats: 50 },
        cio_relationships: [{ identifiers: { id: 'user-42' } }],
      },
      {
        ...person,
        action: 'screen',
        id: ulidOf(events.screen.event.messageId, correctedSampleTime.getTime()),
        name: 'Checkout',
        timestamp: seconds,
        attributes: { step: 2 },
      },
    ]);
  });

  it('event ids are ULIDs of the event time, the same on every attempt', () => {
    const id = ulidOf('msg-1', correctedSampleTime.getTime());
    expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(ulidOf('msg-1', correctedSampleTime.getTime())).toBe(id);
    expect(ulidOf('msg-2', correctedSampleTime.getTime())).not.toBe(id);
    // The first 10 characters are the time: ULIDs of later events sort later.
    expect(ulidOf('msg-1', correctedSampleTime.getTime() + 1000) > id).toBe(true);
  });

  it('turns createdAt into created_at in unix seconds, and skips anonymous events', async () => {
    const identify = sampleEvent({
      type: 'identify',
      userId: 'u-1',
      traits: { createdAt: '2025-01-02T03:04:05Z' },
    });
    const anonymous = sampleEvent({ type: 'track', event: 'Viewed' });
    const outcome = await forwarder.send(lookAlikeDestination(server), [identify, anonymous]);
    expect(outcome.skipped).toEqual([
      { messageId: anonymous.event.messageId, reason: expect.stringMatching(/^anonymous: /) },
    ]);
    expect(server.accepted[0]?.item.attributes).toEqual({ created_at: Date.UTC(2025, 0, 2, 3, 4, 5) / 1000 });
  });

  it('keeps batches under 500 KB; an operation over 32 KB is a permanent failure of that event alone', async () => {
    const events = bulkyEvents(30, 25_000);
    const huge = bulkyEvents(1, 33_000)[0]!;
    const failure = await forwarder.send(lookAlikeDestination(server), [...events, huge]).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 30, requests: 2 });
    expect(failure.undelivered).toEqual([
      { event: huge, reason: expect.stringMatching(/^event_too_large: /), retryable: false },
    ]);
    for (const request of server.requests) expect(Buffer.byteLength(request.body)).toBeLessThan(500_000);
    expect(server.accepted).toHaveLength(30);
  });

  it('207: the operations named are permanent failures, the others accepted and not resent', async () => {
    server.rejectItems((operation) => operation.name === 'Bad', 'attribute too long');
    const events = [
      sampleEvent({ type: 'track', userId: 'u-1', event: 'Good' }),
      sampleEvent({ type: 'track', userId: 'u-1', event: 'Bad' }),
    ];
    const failure = await forwarder.send(lookAlikeDestination(server), events).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 1, requests: 1, status: 207 });
    expect(failure.undelivered).toEqual([
      { event: events[1], reason: 'invalid: invalid attributes attribute too long', retryable: false },
    ]);
    expect(server.accepted.map((a) => a.item.name)).toEqual(['Good']);
  });

  it('uses the object type of the integration config and the EU host for region "eu"', async () => {
    const urls: string[] = [];
    const fakeFetch = (async (url: string | URL | Request, init?: RequestInit) => {
      urls.push(String(url));
      expect(JSON.parse(String(init?.body)).batch[0].identifiers.object_type_id).toBe('4');
      return new Response('{}', { status: 200 });
    }) as typeof fetch;
    const eu = new CustomerIoForwarder(vendorClientOptions({ fetch: fakeFetch }));
    const destination = lookAlikeDestination(server, {
      appConfig: { region: 'eu' },
      config: { global: { objectTypeId: '4' }, tasks: [] },
    });
    await eu.send(destination, [oneOfEachType().group]);
    expect(urls).toEqual(['https://track-eu.customer.io/api/v2/batch']);
  });
});
