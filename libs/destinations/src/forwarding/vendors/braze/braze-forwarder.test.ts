import fc from 'fast-check';
import { BrazeForwarder } from './braze-forwarder';
import { attributesOf } from './braze-mapping';
import { tagsOf } from '../onesignal/onesignal-mapping';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import { correctedSampleTime, oneOfEachType, sampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

const time = correctedSampleTime.toISOString();

describe('Braze forwarder (/users/track look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('braze');
    forwarder = new BrazeForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('maps track, page, screen and identify to the documented objects; group and alias are skipped with reasons', async () => {
    const events = oneOfEachType();
    const destination = lookAlikeDestination(server, {
      appConfig: { restEndpoint: 'https://rest.iad-01.braze.com', appId: 'braze-app-1' },
    });
    const outcome = await forwarder.send(destination, Object.values(events));

    expect(outcome).toMatchObject({ sent: 4, requests: 1 });
    expect(outcome.skipped.map((s) => s.reason.split(':')[0])).toEqual([
      'group_not_supported',
      'alias_not_supported',
    ]);
    expect(server.requests[0]?.headers.authorization).toBe('Bearer braze-test-key');
    expect(server.accepted).toEqual([
      {
        endpoint: 'attributes',
        item: {
          external_id: 'user-42',
          email: 'ada@example.com',
          first_name: 'Ada',
          plan: 'pro',
          logins: 7,
          vip: true,
        },
      },
      {
        endpoint: 'events',
        item: {
          external_id: 'user-42',
          app_id: 'braze-app-1',
          name: 'Plan Upgraded',
          time,
          properties: { plan: 'pro', seats: 3 },
        },
      },
      {
        endpoint: 'events',
        item: {
          external_id: 'user-42',
          app_id: 'braze-app-1',
          name: 'Page Viewed',
          time,
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
        endpoint: 'events',
        item: {
          external_id: 'user-42',
          app_id: 'braze-app-1',
          name: 'Screen Viewed',
          time,
          properties: { name: 'Checkout', step: 2 },
        },
      },
    ]);
  });

  it('turns an Order Completed with products into purchases', async () => {
    const order = sampleEvent({
      type: 'track',
      userId: 'user-42',
      event: 'Order Completed',
      properties: {
        currency: 'eur',
        products: [
          { product_id: 'sku-1', price: 12.5, quantity: 2, name: 'Socks' },
          { sku: 'sku-2', price: '3.10' },
          { name: 'no id, not a purchase', price: 1 },
        ],
      },
    });
    await forwarder.send(lookAlikeDestination(server), [order]);
    expect(server.accepted).toEqual([
      {
        endpoint: 'purchases',
        item: {
          external_id: 'user-42',
          product_id: 'sku-1',
          currency: 'EUR',
          price: 12.5,
          quantity: 2,
          time,
          properties: { name: 'Socks' },
        },
      },
      {
        endpoint: 'purchases',
        item: {
          external_id: 'user-42',
          product_id: 'sku-2',
          currency: 'EUR',
          price: 3.1,
          quantity: 1,
          time,
          properties: {},
        },
      },
    ]);
  });

  it('skips anonymous events unless the integration asks for alias-only profiles', async () => {
    const anonymous = sampleEvent({ type: 'track', event: 'Viewed' });
    const outcome = await forwarder.send(lookAlikeDestination(server), [anonymous]);
    expect(outcome).toEqual({
      sent: 0,
      requests: 0,
      skipped: [{ messageId: anonymous.event.messageId, reason: expect.stringMatching(/^anonymous: /) }],
    });

    const withProfiles = lookAlikeDestination(server, {
      config: { global: { anonymousProfiles: true }, tasks: [] },
    });
    await forwarder.send(withProfiles, [anonymous]);
    expect(server.accepted[0]?.item).toMatchObject({
      user_alias: { alias_name: 'anon-1234', alias_label: 'anonymous_id' },
      _update_existing_only: false,
    });
  });

  it('counts attributes, events and purchases together: 75 objects per request, an order never split', async () => {
    const identifies = Array.from({ length: 30 }, (_, i) =>
      sampleEvent({ type: 'identify', userId: `u-${i}`, traits: { plan: 'pro' } }),
    );
    const tracks = Array.from({ length: 30 }, (_, i) =>
      sampleEvent({ type: 'track', userId: `u-${i}`, event: 'Clicked' }),
    );
    const orders = Array.from({ length: 10 }, (_, i) =>
      sampleEvent({
        type: 'track',
        userId: `u-${i}`,
        event: 'Order Completed',
        properties: {
          products: [
            { sku: 'a', price: 1 },
            { sku: 'b', price: 2 },
          ],
        },
      }),
    );
    const outcome = await forwarder.send(lookAlikeDestination(server), [...identifies, ...tracks, ...orders]);
    expect(outcome).toMatchObject({ sent: 70, requests: 2 });
    const sizes = server.requests.map((r) => {
      const body = JSON.parse(r.body);
      return [body.attributes?.length ?? 0, body.events?.length ?? 0, body.purchases?.length ?? 0];
    });
    // 30 + 30 + 14 purchases (7 orders) = 74: the 8th order's two purchases would make 76.
    expect(sizes).toEqual([
      [30, 30, 14],
      [0, 0, 6],
    ]);
  });

  it('non-fatal errors: the objects named are permanent failures, the others processed and not resent', async () => {
    server.rejectItems((object) => object.name === 'Bad', 'Invalid event');
    const events = [
      sampleEvent({ type: 'identify', userId: 'u-1', traits: { plan: 'pro' } }),
      sampleEvent({ type: 'track', userId: 'u-1', event: 'Good' }),
      sampleEvent({ type: 'track', userId: 'u-1', event: 'Bad' }),
    ];
    const failure = await forwarder.send(lookAlikeDestination(server), events).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 2, requests: 1, status: 201 });
    expect(failure.undelivered).toEqual([
      { event: events[2], reason: 'rejected: Invalid event', retryable: false },
    ]);
    expect(server.accepted.map((a) => a.endpoint)).toEqual(['attributes', 'events']);
  });

  it('429: waits until X-RateLimit-Reset when there is no Retry-After', async () => {
    const reset = Math.floor(Date.now() / 1000) + 20;
    server.failNext({ status: 429, headers: { 'X-RateLimit-Reset': String(reset) } });
    const failure = await forwarder
      .send(lookAlikeDestination(server), [oneOfEachType().track])
      .catch((e) => e);
    expect(failure.retryable).toBe(true);
    expect(failure.retryAfterMs).toBeGreaterThan(15_000);
    expect(failure.retryAfterMs).toBeLessThanOrEqual(20_000);
  });

  it('sends the key only to a Braze host: another restEndpoint is invalid config', async () => {
    const real = new BrazeForwarder(vendorClientOptions());
    for (const restEndpoint of ['https://evil.example.com', 'http://rest.iad-01.braze.com', undefined]) {
      const destination = lookAlikeDestination(server, { appConfig: restEndpoint ? { restEndpoint } : {} });
      const failure = await real.send(destination, [oneOfEachType().track]).catch((e) => e);
      expect(failure).toMatchObject({
        retryable: false,
        requests: 0,
        reason: expect.stringContaining('invalid_config: appConfig.restEndpoint'),
      });
    }
  });
});

describe('attributesOf (generative: odd trait names)', () => {
  // Names Braze's standard attributes take (braze-forwarder.ts); every other trait keeps its name.
  const standard = new Set(['email', 'firstName', 'first_name', 'lastName', 'last_name', 'phone', 'gender']);
  for (const name of ['birthday', 'city', 'country', 'language']) standard.add(name);
  const oddKeys = fc.oneof(
    fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '__defineGetter__'),
    fc.string({ unit: 'grapheme' }).filter((key) => !standard.has(key)),
  );

  it('carries every other trait as an own attribute of the same name and value', () => {
    fc.assert(
      fc.property(fc.dictionary(oddKeys, fc.oneof(fc.string(), fc.integer()), { maxKeys: 8 }), (traits) => {
        const sent = JSON.parse(JSON.stringify(attributesOf(traits))) as Record<string, unknown>;
        expect(Object.keys(sent).sort()).toEqual(Object.keys(traits).sort());
        for (const [key, value] of Object.entries(traits)) expect(sent[key]).toEqual(value);
      }),
    );
  });

  it('a trait named constructor or __proto__ is an attribute of that name', () => {
    const text = '{"constructor":"c","__proto__":{"x":1},"toString":"t"}';
    expect(JSON.parse(JSON.stringify(attributesOf(JSON.parse(text) as Record<string, unknown>)))).toEqual(
      JSON.parse(text),
    );
  });

  it('OneSignal tags carry a trait named __proto__ too', () => {
    const tags = tagsOf(JSON.parse('{"__proto__":"p","constructor":"c"}') as Record<string, unknown>);
    expect(JSON.parse(JSON.stringify(tags))).toEqual(JSON.parse('{"__proto__":"p","constructor":"c"}'));
  });
});
