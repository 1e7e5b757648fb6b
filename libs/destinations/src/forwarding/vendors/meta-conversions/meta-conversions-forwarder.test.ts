import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { TrackingEvent } from '@pipeline/events';
import { DeliveryFailure } from '../../delivery-failure';
import { type Forwarder, type OutboundEvent, vendorClientOptions } from '../../forwarder';
import { MetaConversionsForwarder } from './meta-conversions-forwarder';
import { META_MAX_AGE_MS, metaPhone, metaServerEventOf } from './meta-conversions-mapping';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');

let counter = 0;
/** An event received at `receivedAt` (default now), sent with no clock error. */
function outbound(
  event: Record<string, unknown>,
  receivedAt = new Date(),
  receipt: Partial<OutboundEvent['receipt']> = {},
): OutboundEvent {
  counter += 1;
  return {
    event: {
      messageId: `meta-msg-${counter}`,
      anonymousId: 'anon-7',
      timestamp: receivedAt.toISOString(),
      ...event,
    } as unknown as TrackingEvent,
    receipt: { receivedAt, ip: '203.0.113.9', userAgent: 'Mozilla/5.0 (look-alike)', ...receipt },
  };
}

async function failureOf(promise: Promise<unknown>): Promise<DeliveryFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DeliveryFailure) return error;
    throw error;
  }
  throw new Error('expected a DeliveryFailure');
}

const page = { url: 'https://shop.example/checkout?step=2', path: '/checkout', title: 'Checkout' };

describe('Meta Conversions API forwarder (Graph API /events look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('meta_conversions');
    forwarder = new MetaConversionsForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('sends a purchase and a page view with hashed user data, the receipt’s IP and user agent, and the messageId as event_id', async () => {
    const now = new Date();
    const purchase = outbound(
      {
        type: 'track',
        userId: 'user-42',
        event: 'Order Completed',
        properties: {
          order_id: 'ord-1',
          revenue: 49.9,
          currency: 'eur',
          email: '  Ada@Example.COM ',
          phone: '+44 (0)20 7946 0958',
          products: [{ product_id: 'sku-1' }, { sku: 'sku-2' }, 'junk'],
        },
        context: {
          page,
          traits: { firstName: 'Ada', lastName: 'Lovelace' },
          clickId: { fbclid: 'abc', fbp: 'fb.1.1.2' },
        },
      },
      now,
    );
    const view = outbound({ type: 'page', name: 'Checkout', context: { page } }, now);
    const outcome = await forwarder.send(lookAlikeDestination(server), [purchase, view]);
    expect(outcome).toEqual({ sent: 2, requests: 1, skipped: [] });

    const request = server.requests[0]!;
    expect(request.path).toBe('/v24.0/1234567890/events');
    const body = JSON.parse(request.body) as Record<string, unknown>;
    expect(body.access_token).toBe('EAAB-look-alike-token');
    const seconds = Math.floor(now.getTime() / 1000);
    expect(body.data).toEqual([
      {
        event_name: 'Purchase',
        event_time: seconds,
        event_id: purchase.event.messageId,
        action_source: 'website',
        event_source_url: page.url,
        user_data: {
          em: [sha('ada@example.com')],
          ph: [sha('4402079460958')],
          fn: [sha('ada')],
          ln: [sha('lovelace')],
          external_id: [sha('user-42')],
          client_ip_address: '203.0.113.9',
          client_user_agent: 'Mozilla/5.0 (look-alike)',
          fbc: `fb.1.${now.getTime()}.abc`,
          fbp: 'fb.1.1.2',
        },
        custom_data: { value: 49.9, currency: 'EUR', order_id: 'ord-1', content_ids: ['sku-1', 'sku-2'] },
      },
      {
        event_name: 'PageView',
        event_time: seconds,
        event_id: view.event.messageId,
        action_source: 'website',
        event_source_url: page.url,
        user_data: {
          external_id: [sha('anon-7')],
          client_ip_address: '203.0.113.9',
          client_user_agent: 'Mozilla/5.0 (look-alike)',
        },
      },
    ]);
    expect(server.accepted.map((a) => a.endpoint)).toEqual(['events', 'events']);
  });

  it('skips what Meta cannot take, with reasons: other call types, events over 7 days old, a purchase without value', async () => {
    const now = new Date();
    const eightDaysAgo = new Date(now.getTime() - 8 * 86_400_000);
    const events = [
      outbound({ type: 'identify', userId: 'u', traits: { email: 'a@example.com' } }, now),
      outbound({ type: 'screen', name: 'Home' }, now),
      outbound({ type: 'track', event: 'Signed Up' }, eightDaysAgo),
      outbound({ type: 'track', event: 'Order Completed', properties: { currency: 'USD' } }, now),
      // No page and no user agent: a server-side event, action_source other.
      outbound({ type: 'track', event: 'Signed Up', userId: 'u-9' }, now, { userAgent: null, ip: null }),
    ];
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome.sent).toBe(1);
    expect(outcome.skipped.map((s) => s.reason.split(':')[0])).toEqual([
      'identify_not_supported',
      'screen_not_supported',
      'too_old',
      'purchase_without_value',
    ]);
    expect(server.accepted[0]?.item).toEqual({
      event_name: 'CompleteRegistration',
      event_time: Math.floor(now.getTime() / 1000),
      event_id: events[4]!.event.messageId,
      action_source: 'other',
      user_data: { external_id: [sha('u-9')] },
    });
  });

  it('a test event code sends to Test Events; a hashed email is not hashed twice', async () => {
    const hashedEmail = sha('ada@example.com');
    const destination = lookAlikeDestination(server, {
      appConfig: { pixelId: '1234567890', testEventCode: 'TEST4242', apiVersion: 'v23.0' },
    });
    await forwarder.send(destination, [
      outbound({ type: 'track', event: 'Lead', properties: { email: hashedEmail.toUpperCase() } }),
    ]);
    expect(server.requests[0]?.path).toBe('/v23.0/1234567890/events');
    expect(JSON.parse(server.requests[0]!.body).test_event_code).toBe('TEST4242');
    expect(server.accepted[0]?.endpoint).toBe('test_events');
    expect((server.accepted[0]?.item.user_data as { em: string[] }).em).toEqual([hashedEmail]);
  });

  it('one invalid event fails its whole request (Meta does not say which): halving finds it, the others go', async () => {
    server.rejectItems((item) => item.event_name === 'Bad', 'rejected for the test');
    const events = [
      ...Array.from({ length: 999 }, () => outbound({ type: 'track', event: 'Good' })),
      outbound({ type: 'track', event: 'Bad' }),
      outbound({ type: 'track', event: 'Good' }),
    ];
    const patient = new MetaConversionsForwarder(vendorClientOptions({ maxSplitRequests: 64 }, server.url));
    const failure = await failureOf(patient.send(lookAlikeDestination(server), events));
    // 1000 → 500 + 500 → … → the bad event alone: 9 halvings of 2 requests, and the last batch.
    expect(failure).toMatchObject({ retryable: false, status: 400, sent: 1000, requests: 1 + 18 + 1 });
    expect(failure.undelivered).toEqual([{ event: events[999], reason: 'http_400', retryable: false }]);
    expect(failure.detail).toBe('Invalid parameter: data[0]: rejected for the test');
    expect(server.accepted).toHaveLength(1000);
    expect(new Set(server.accepted.map((a) => a.item.event_id)).size).toBe(1000);
  });

  it('past the split-request cap, what was not isolated is retried later', async () => {
    server.rejectItems((item) => item.event_name === 'Bad', 'rejected for the test');
    const events = [
      ...Array.from({ length: 999 }, () => outbound({ type: 'track', event: 'Good' })),
      outbound({ type: 'track', event: 'Bad' }),
    ];
    const failure = await failureOf(forwarder.send(lookAlikeDestination(server), events));
    expect(failure.retryable).toBe(true);
    expect(failure.requests).toBe(1 + 16);
    const reasons = new Set(failure.undelivered.map((u) => `${u.reason} ${u.retryable}`));
    expect(reasons).toEqual(new Set(['http_400: not isolated within 16 smaller requests true']));
    expect(failure.undelivered.filter((u) => u.event === events[999])).toHaveLength(1);
    expect(failure.sent + failure.undelivered.length).toBe(1000);
  });

  it('Graph rate limits come as 400 with code 17: retryable after a minute; a bad token (190) stops the send', async () => {
    server.failNext({
      status: 400,
      body: { error: { message: '(#17) User request limit reached', type: 'OAuthException', code: 17 } },
    });
    const limited = await failureOf(
      forwarder.send(lookAlikeDestination(server), [outbound({ type: 'track', event: 'A' })]),
    );
    expect(limited).toMatchObject({ retryable: true, status: 400, retryAfterMs: 60_000 });

    const wrong = lookAlikeDestination(server, { credentials: { accessToken: 'EAAB-wrong' } });
    const events = Array.from({ length: 1001 }, () => outbound({ type: 'track', event: 'A' }));
    const denied = await failureOf(forwarder.send(wrong, events));
    expect(denied).toMatchObject({ retryable: false, status: 400, requests: 1 });
    expect(denied.detail).toBe('Invalid OAuth access token - Cannot parse access token');
  });

  it('refuses a pixel id that is not numeric, without a request', async () => {
    const failure = await failureOf(
      forwarder.send(lookAlikeDestination(server, { appConfig: { pixelId: '../me' } }), [
        outbound({ type: 'track', event: 'A' }),
      ]),
    );
    expect(failure.reason).toBe(
      'meta_conversions: invalid_config: appConfig.pixelId must be the pixel’s numeric id',
    );
    expect(server.requests).toHaveLength(0);
  });

  it('normalises phones as Meta does', () => {
    expect(metaPhone('+1 (650) 555-1212')).toBe('16505551212');
    expect(metaPhone('0044 20 7946 0958')).toBe('442079460958');
    expect(metaPhone('call me')).toBeUndefined();
  });

  it('any event time and properties: too old is skipped, the rest is taken by the look-alike with its time', async () => {
    const day = 86_400_000;
    const value = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 20 }),
      fc.double(),
      fc.integer(),
      fc.constant(null),
    );
    const generated = fc.record({
      ageMs: fc.oneof(
        fc.integer({ min: -day, max: 10 * day }),
        fc.constantFrom(META_MAX_AGE_MS - 1000, META_MAX_AGE_MS + 1000, 0, -1),
      ),
      name: fc.oneof(
        fc.constantFrom('Order Completed', 'Product Added', 'Signed Up', 'constructor', '__proto__'),
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 30 }),
      ),
      properties: fc.dictionary(fc.string({ unit: 'grapheme', maxLength: 10 }), value, { maxKeys: 5 }),
      revenue: fc.option(fc.double({ noNaN: true, noDefaultInfinity: true }), { nil: undefined }),
      currency: fc.option(fc.string({ unit: 'grapheme', maxLength: 4 }), { nil: undefined }),
      email: fc.option(fc.emailAddress(), { nil: undefined }),
      phone: fc.option(fc.string({ unit: 'grapheme', maxLength: 15 }), { nil: undefined }),
      page: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(generated, { minLength: 1, maxLength: 8 }), async (specs) => {
        server.requests.length = 0;
        server.accepted.length = 0;
        const now = Date.now();
        const events = specs.map((spec) =>
          outbound(
            {
              type: 'track',
              event: spec.name,
              properties: {
                ...spec.properties,
                ...(spec.revenue !== undefined ? { revenue: spec.revenue } : {}),
                ...(spec.currency !== undefined ? { currency: spec.currency } : {}),
                ...(spec.email !== undefined ? { email: spec.email } : {}),
                ...(spec.phone !== undefined ? { phone: spec.phone } : {}),
              },
              ...(spec.page ? { context: { page } } : {}),
            },
            new Date(now - spec.ageMs),
          ),
        );
        let outcome;
        try {
          outcome = await forwarder.send(lookAlikeDestination(server), events);
        } catch (error) {
          throw new Error(`refused: ${(error as DeliveryFailure).detail ?? String(error)}`);
        }
        const expected = events.map((e) => metaServerEventOf(e, Date.now()));
        const sendable = expected.filter((e) => typeof e !== 'string');
        expect(outcome.sent).toBe(sendable.length);
        expect(server.accepted.map((a) => a.item.event_id)).toEqual(sendable.map((e) => e.event_id));
        specs.forEach((spec, i) => {
          const verdict = expected[i]!;
          if (spec.ageMs > META_MAX_AGE_MS + 5000) expect(verdict).toMatch(/^too_old/);
          if (typeof verdict === 'string') return;
          if (spec.ageMs >= 0) expect(verdict.event_time).toBe(Math.floor((now - spec.ageMs) / 1000));
          else expect(verdict.event_time).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
        });
      }),
      { numRuns: 40 },
    );
  });
});
