import { createHash } from 'node:crypto';
import fc from 'fast-check';
import type { TrackingEvent } from '@pipeline/events';
import { DeliveryFailure } from '../../delivery-failure';
import { type Forwarder, type OutboundEvent, vendorClientOptions } from '../../forwarder';
import { GoogleAdsForwarder } from './google-ads-forwarder';
import { clickConversionOf, googleDateTime, googleEmail } from './google-ads-mapping';
import { rawSampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

const sha = (text: string) => createHash('sha256').update(text).digest('hex');
const day = 86_400_000;

let counter = 0;
function outbound(event: Record<string, unknown>, at = new Date()): OutboundEvent {
  counter += 1;
  return {
    event: {
      messageId: `gads-msg-${counter}`,
      anonymousId: 'anon-7',
      timestamp: at.toISOString(),
      ...event,
    } as unknown as TrackingEvent,
    receipt: { receivedAt: at, ip: '203.0.113.9', userAgent: 'Mozilla/5.0 (look-alike)' },
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

/** `yyyy-mm-dd hh:mm:ss+00:00`, written out by hand. */
function utc(date: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${date.getUTCFullYear()}-${p(date.getUTCMonth() + 1)}-${p(date.getUTCDate())} ${p(date.getUTCHours())}:${p(date.getUTCMinutes())}:${p(date.getUTCSeconds())}+00:00`;
}

describe('Google Ads forwarder (OAuth token and uploadClickConversions look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('google_ads');
    forwarder = new GoogleAdsForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('exchanges the refresh token, then uploads conversions with gclid or hashed email, partialFailure on', async () => {
    const at = new Date(Date.now() - 3 * day);
    const byClick = outbound(
      {
        type: 'track',
        event: 'Order Completed',
        properties: { order_id: 'ord-77', revenue: 120.5, currency: 'eur' },
        context: { clickId: { gclid: 'Cj0KCQ-test_gclid' } },
      },
      at,
    );
    const byEmail = outbound(
      { type: 'track', event: 'Signed Up', context: { traits: { email: ' A.Da.Lovelace@GoogleMail.com ' } } },
      at,
    );
    const byUrl = outbound(
      {
        type: 'track',
        event: 'Clicked',
        properties: { value: '9.99' },
        context: { page: { url: 'https://shop.example/landing?gclid=from-url&x=1' } },
      },
      at,
    );
    const destination = lookAlikeDestination(server, {
      appConfig: {
        customerId: '123-456-7890',
        loginCustomerId: '999-888-7777',
        conversionActions: { 'Order Completed': '1002', 'Signed Up': 1003, Clicked: '1001' },
      },
    });
    const outcome = await forwarder.send(destination, [byClick, byEmail, byUrl]);
    expect(outcome).toEqual({ sent: 3, requests: 2, skipped: [] });

    const [token, upload] = server.requests;
    expect(token?.path).toBe('/token');
    expect(token?.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(Object.fromEntries(new URLSearchParams(token!.body))).toEqual({
      grant_type: 'refresh_token',
      client_id: 'look-alike.apps.googleusercontent.com',
      client_secret: 'look-alike-client-secret',
      refresh_token: '1//look-alike-refresh-token',
    });
    expect(upload?.path).toBe('/v26/customers/1234567890:uploadClickConversions');
    expect(upload?.headers.authorization).toMatch(/^Bearer ya29\.lookalike-/);
    expect(upload?.headers['developer-token']).toBe('dev-token-look-alike');
    expect(upload?.headers['login-customer-id']).toBe('9998887777');
    const time = utc(at);
    expect(JSON.parse(upload!.body)).toEqual({
      partialFailure: true,
      conversions: [
        {
          gclid: 'Cj0KCQ-test_gclid',
          conversionAction: 'customers/1234567890/conversionActions/1002',
          conversionDateTime: time,
          conversionValue: 120.5,
          currencyCode: 'EUR',
          orderId: 'ord-77',
        },
        {
          userIdentifiers: [{ hashedEmail: sha('adalovelace@googlemail.com') }],
          conversionAction: 'customers/1234567890/conversionActions/1003',
          conversionDateTime: time,
          orderId: byEmail.event.messageId,
        },
        {
          gclid: 'from-url',
          conversionAction: 'customers/1234567890/conversionActions/1001',
          conversionDateTime: time,
          conversionValue: 9.99,
          orderId: byUrl.event.messageId,
        },
      ],
    });
  });

  it('skips events with no conversion action, no click id or email, and other call types', async () => {
    const events = [
      outbound({ type: 'track', event: 'Unmapped', context: { clickId: { gclid: 'g' } } }),
      outbound({ type: 'track', event: 'Clicked' }),
      outbound({ type: 'page', name: 'Home', context: { clickId: { gclid: 'g' } } }),
      outbound({ type: 'track', event: 'Clicked', properties: { wbraid: 'wb-1' } }),
    ];
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome.sent).toBe(1);
    expect(outcome.skipped.map((s) => s.reason.split(':')[0])).toEqual([
      'no_conversion_action',
      'no_click_id',
      'page_not_supported',
    ]);
    expect(server.accepted.filter((a) => a.endpoint !== 'token').map((a) => a.item.wbraid)).toEqual(['wb-1']);
    // Nothing to convert: no token is fetched at all.
    server.requests.length = 0;
    await forwarder.send(
      lookAlikeDestination(server, { credentials: { ...server.credentials, refreshToken: 'other' } }),
      [events[0]!],
    );
    expect(server.requests).toHaveLength(0);
  });

  it('caches the access token across sends and clients', async () => {
    const send = () =>
      new GoogleAdsForwarder(vendorClientOptions({}, server.url)).send(lookAlikeDestination(server), [
        outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'g1' } } }),
      ]);
    await send();
    await send();
    expect(server.requests.map((r) => r.path)).toEqual([
      '/token',
      '/v26/customers/1234567890:uploadClickConversions',
      '/v26/customers/1234567890:uploadClickConversions',
    ]);
  });

  it('reports partial failures per conversion: permanent for CLICK_NOT_FOUND and an expired click, retryable for TOO_RECENT_CONVERSION_ACTION', async () => {
    server.rejectItems((item) => item.gclid === 'unknown', 'CLICK_NOT_FOUND');
    server.rejectItems((item) => item.gclid === 'fresh', 'TOO_RECENT_CONVERSION_ACTION');
    const events = [
      outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'ok-1' } } }),
      outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'unknown' } } }),
      outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'fresh' } } }),
      outbound(
        { type: 'track', event: 'Clicked', context: { clickId: { gclid: 'old' } } },
        new Date(Date.now() - 100 * day),
      ),
      outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'ok-2' } } }),
    ];
    const failure = await failureOf(forwarder.send(lookAlikeDestination(server), events));
    expect(failure).toMatchObject({ retryable: true, sent: 2, requests: 2 });
    expect(failure.undelivered.map((u) => [u.event, u.reason, u.retryable])).toEqual([
      [events[1], 'rejected: CLICK_NOT_FOUND', false],
      [events[2], 'rejected: TOO_RECENT_CONVERSION_ACTION', true],
      [events[3], 'rejected: EXPIRED_EVENT', false],
    ]);
    expect(server.accepted.filter((a) => a.endpoint !== 'token').map((a) => a.item.gclid)).toEqual([
      'ok-1',
      'ok-2',
    ]);
  });

  it('a revoked refresh token (invalid_grant) stops the send permanently after one request', async () => {
    const destination = lookAlikeDestination(server, {
      credentials: { ...server.credentials, refreshToken: '1//revoked' },
    });
    const events = Array.from({ length: 3 }, () =>
      outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'g' } } }),
    );
    const failure = await failureOf(forwarder.send(destination, events));
    expect(failure).toMatchObject({
      retryable: false,
      status: 400,
      requests: 1,
      reason: 'google_ads: http_400',
    });
    expect(failure.detail).toBe('invalid_grant');
    expect(failure.undelivered).toHaveLength(3);
  });

  it('a wrong developer token is 401 at the upload: the send stops', async () => {
    const destination = lookAlikeDestination(server, {
      credentials: { ...server.credentials, developerToken: 'wrong' },
    });
    const failure = await failureOf(
      forwarder.send(destination, [
        outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'g' } } }),
      ]),
    );
    expect(failure).toMatchObject({ retryable: false, status: 401, requests: 2 });
  });

  it('refuses config it cannot use, without a request', async () => {
    const event = outbound({ type: 'track', event: 'Clicked', context: { clickId: { gclid: 'g' } } });
    const cases: [Record<string, unknown>, string][] = [
      [{ customerId: '12345', conversionActions: {} }, 'appConfig.customerId must be 10 digits'],
      [{ customerId: '1234567890' }, 'appConfig.conversionActions is required'],
      [
        { customerId: '1234567890', conversionActions: { Clicked: 'abc' } },
        'conversionActions["Clicked"] must be a numeric conversion action id',
      ],
    ];
    for (const [appConfig, reason] of cases) {
      const failure = await failureOf(forwarder.send(lookAlikeDestination(server, { appConfig }), [event]));
      expect(failure.reason).toBe(`google_ads: invalid_config: ${reason}`);
    }
    expect(server.requests).toHaveLength(0);
  });

  it('says adUserData GRANTED only when the event says marketing consent was given', () => {
    const actions = new Map([['Clicked', '1001']]);
    const at = new Date();
    const conversion = (consent?: Record<string, boolean>) =>
      clickConversionOf(
        rawSampleEvent({
          type: 'track',
          event: 'Clicked',
          timestamp: at.toISOString(),
          properties: { gclid: 'g-1' },
          ...(consent ? { context: { consent } } : {}),
        }),
        '1234567890',
        actions,
        at.getTime() + 60_000,
      ) as Record<string, unknown>;
    expect(conversion({ marketing: true }).consent).toEqual({ adUserData: 'GRANTED' });
    expect(conversion().consent).toBeUndefined();
    expect(conversion({ analytics: true }).consent).toBeUndefined();
  });

  it('formats times and emails as Google expects', () => {
    expect(googleDateTime(new Date('2026-01-02T03:04:05.678Z'))).toBe('2026-01-02 03:04:05+00:00');
    expect(googleEmail(' J.Doe@Gmail.com')).toBe('jdoe@gmail.com');
    expect(googleEmail('J.Doe@example.com')).toBe('j.doe@example.com');
  });

  it('any values, order ids and times within 90 days: every conversion is accepted, with its own values', async () => {
    const generated = fc.record({
      ageMs: fc.oneof(fc.integer({ min: -day, max: 89 * day }), fc.constantFrom(0, 89 * day)),
      value: fc.option(
        fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string({ maxLength: 8 })),
        {
          nil: undefined,
        },
      ),
      currency: fc.option(fc.string({ unit: 'grapheme', maxLength: 4 }), { nil: undefined }),
      orderId: fc.option(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 120 }), { nil: undefined }),
      gclid: fc.option(fc.stringMatching(/^[\w-]{1,100}$/), { nil: undefined }),
      email: fc.emailAddress(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(generated, { minLength: 1, maxLength: 6 }), async (specs) => {
        server.requests.length = 0;
        server.accepted.length = 0;
        const now = Date.now();
        const events = specs.map((spec) =>
          outbound(
            {
              type: 'track',
              event: 'Order Completed',
              properties: {
                ...(spec.value !== undefined ? { value: spec.value } : {}),
                ...(spec.currency !== undefined ? { currency: spec.currency } : {}),
                ...(spec.orderId !== undefined ? { order_id: spec.orderId } : {}),
                email: spec.email,
              },
              ...(spec.gclid ? { context: { clickId: { gclid: spec.gclid } } } : {}),
            },
            new Date(now - spec.ageMs),
          ),
        );
        const outcome = await forwarder.send(lookAlikeDestination(server), events);
        expect(outcome.sent).toBe(events.length);
        const uploaded = server.accepted.filter((a) => a.endpoint !== 'token').map((a) => a.item);
        expect(uploaded).toHaveLength(events.length);
        uploaded.forEach((conversion, i) => {
          const spec = specs[i]!;
          if (spec.gclid) expect(conversion.gclid).toBe(spec.gclid);
          else
            expect(conversion.userIdentifiers).toEqual([
              { hashedEmail: sha(googleEmail(spec.email.toLowerCase())) },
            ]);
          const numeric =
            typeof spec.value === 'number'
              ? spec.value
              : typeof spec.value === 'string' && /^-?\d+(\.\d+)?$/.test(spec.value.trim())
                ? Number(spec.value)
                : undefined;
          // JSON has no -0.
          expect(conversion.conversionValue).toBe(numeric === undefined ? undefined : numeric + 0);
          const orderId = spec.orderId ?? events[i]!.event.messageId;
          expect(conversion.orderId).toBe(orderId.length <= 64 ? orderId : sha(orderId).slice(0, 64));
          if (spec.ageMs >= 0) expect(conversion.conversionDateTime).toBe(utc(new Date(now - spec.ageMs)));
          // Ahead of our clock: sent as the time of sending.
          else
            expect(Date.parse(String(conversion.conversionDateTime).replace(' ', 'T'))).toBeLessThanOrEqual(
              Date.now(),
            );
        });
      }),
      { numRuns: 40 },
    );
  });
});
