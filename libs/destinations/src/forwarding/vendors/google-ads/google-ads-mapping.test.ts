import { createHash } from 'node:crypto';
import type { TrackingEvent } from '@pipeline/events';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { InvalidConfig } from '../../destination-settings';
import { clickConversionOf, conversionActionsOf, googleDateTime, googleEmail } from './google-ads-mapping';
import { correctedSampleTime, outboundOf, sampleTimestamp } from '../../testing/sample-events';

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const actions = new Map([['Order Completed', '123']]);
const later = correctedSampleTime.getTime() + 60_000;
const action = 'customers/1234567890/conversionActions/123';
const when = '2026-03-01 11:59:54+00:00';

function convert(
  properties: Record<string, unknown>,
  fields: Partial<TrackingEvent> & Record<string, unknown> = {},
  now = later,
) {
  const event = { ...base, type: 'track', event: 'Order Completed', properties, ...fields } as TrackingEvent;
  return clickConversionOf(outboundOf(event), '1234567890', actions, now);
}

function destination(
  global: Record<string, unknown>,
  appConfig: Record<string, unknown>,
): ResolvedDestination {
  return {
    integrationId: 'int-1',
    kind: 'advertising',
    appId: 'app-1',
    appType: 'google_ads',
    dataType: 'events',
    config: { global, tasks: [{ task_type: 'forward' }] },
    credentials: {},
    appConfig,
  } as ResolvedDestination;
}

describe('Google Ads click conversion mapping', () => {
  it('normalises emails as Google does: dots out of Gmail local parts only', () => {
    expect(googleEmail(' A.Da.L@Gmail.com ')).toBe('adal@gmail.com');
    expect(googleEmail('a.da@googlemail.com')).toBe('ada@googlemail.com');
    expect(googleEmail('a.da@example.com')).toBe('a.da@example.com');
    expect(googleEmail('a.da@gmail.com.example')).toBe('a.da@gmail.com.example');
    expect(googleEmail('no-at-sign')).toBe('no-at-sign@');
  });

  it('writes times as yyyy-mm-dd hh:mm:ss+00:00 in UTC', () => {
    expect(googleDateTime(new Date('2026-03-01T23:04:05.678+02:00'))).toBe('2026-03-01 21:04:05+00:00');
  });

  it('reads conversion actions from the integration’s config, else the app’s', () => {
    expect(
      conversionActionsOf(destination({ conversionActions: { A: '1' } }, { conversionActions: { B: '2' } })),
    ).toEqual(new Map([['A', '1']]));
    expect(
      conversionActionsOf(destination({}, { conversionActions: { B: 2, C: '12345678901234567890' } })),
    ).toEqual(
      new Map([
        ['B', '2'],
        ['C', '12345678901234567890'],
      ]),
    );
  });

  it('refuses missing or malformed conversion actions', () => {
    const refusal = (global: Record<string, unknown>, app: Record<string, unknown>) => {
      try {
        conversionActionsOf(destination(global, app));
      } catch (error) {
        return error instanceof InvalidConfig ? error.message : `not InvalidConfig: ${String(error)}`;
      }
      return 'accepted';
    };
    expect(refusal({}, {})).toBe('appConfig.conversionActions is required');
    expect(refusal({ conversionActions: null }, {})).toBe('appConfig.conversionActions is required');
    expect(refusal({}, { conversionActions: null })).toBe('appConfig.conversionActions is required');
    const malformed = 'conversionActions must map event names to conversion action ids';
    expect(refusal({}, { conversionActions: ['1'] })).toBe(malformed);
    expect(refusal({}, { conversionActions: 'A=1' })).toBe(malformed);
    for (const id of ['', '1a', 'a1', '123456789012345678901', 1.5, true, ['1'], { id: '1' }])
      expect(refusal({}, { conversionActions: { A: id } })).toBe(
        'conversionActions["A"] must be a numeric conversion action id',
      );
  });

  it('sends a click id, gclid before gbraid before wbraid, and no user identifiers with it', () => {
    const clickId = { gclid: 'G', gbraid: 'B', wbraid: 'W' };
    const withEmail = { email: 'ada@example.com' };
    expect(convert(withEmail, { context: { clickId } })).toStrictEqual({
      gclid: 'G',
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
    });
    expect(convert(withEmail, { context: { clickId: { gbraid: 'B', wbraid: 'W' } } })).toStrictEqual({
      gbraid: 'B',
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
    });
    expect(convert({ wbraid: 'W' })).toStrictEqual({
      wbraid: 'W',
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
    });
  });

  it('without a click id, identifies by hashed email and E.164 phone', () => {
    expect(convert({ email: ' A.Da@GMail.com', phone: '+1 (415) 555-0100' })).toStrictEqual({
      userIdentifiers: [{ hashedEmail: sha('ada@gmail.com') }, { hashedPhoneNumber: sha('+14155550100') }],
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
    });
    const hashedEmail = sha('someone@example.com');
    expect(convert({ email: hashedEmail.toUpperCase(), phone: '415 555 0100' })).toStrictEqual({
      userIdentifiers: [{ hashedEmail }],
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
    });
    for (const phone of [
      '+0415555010',
      '+123456',
      '+1234567890123456',
      '+1415555x0100',
      '14155550100',
      '1+4155550100',
    ])
      expect(convert({ email: 'ada@example.com', phone })).toMatchObject({
        userIdentifiers: [{ hashedEmail: sha('ada@example.com') }],
      });
    expect(convert({ email: 'ada@example.com', phone: '+1234567' })).toMatchObject({
      userIdentifiers: [{ hashedEmail: sha('ada@example.com') }, { hashedPhoneNumber: sha('+1234567') }],
    });
    expect(convert({ email: 'ada@example.com', phone: '+123456789012345' })).toMatchObject({
      userIdentifiers: [
        { hashedEmail: sha('ada@example.com') },
        { hashedPhoneNumber: sha('+123456789012345') },
      ],
    });
  });

  it('skips what is not a mapped track call with a click id or email, with reasons', () => {
    expect(convert({ phone: '+14155550100' })).toBe(
      'no_click_id: a Google Ads conversion needs a gclid, gbraid or wbraid, or an email',
    );
    expect(convert({ gclid: 'G' }, { event: 'Other' })).toBe(
      'no_conversion_action: no conversion action is mapped to this event',
    );
    expect(convert({ gclid: 'G' }, { event: 'constructor' })).toBe(
      'no_conversion_action: no conversion action is mapped to this event',
    );
    const page = { ...base, type: 'page', properties: { gclid: 'G' } } as TrackingEvent;
    expect(clickConversionOf(outboundOf(page), '1234567890', actions, later)).toBe(
      'page_not_supported: Google Ads conversions are track calls',
    );
  });

  it('sends the value (value, else revenue, else total) with a valid currency, upper case', () => {
    const valueOf = (properties: Record<string, unknown>) => {
      const conversion = convert({ gclid: 'G', ...properties });
      return typeof conversion === 'string'
        ? conversion
        : { value: conversion.conversionValue, currency: conversion.currencyCode };
    };
    expect(valueOf({ value: 10, revenue: 20, total: 30, currency: ' eur ' })).toEqual({
      value: 10,
      currency: 'EUR',
    });
    expect(valueOf({ revenue: '20.50', total: 30, currency: 'USD' })).toEqual({
      value: 20.5,
      currency: 'USD',
    });
    expect(valueOf({ value: 'ten', revenue: null, total: ' -3 ' })).toEqual({
      value: -3,
      currency: undefined,
    });
    expect(valueOf({ value: Infinity, total: 4, currency: 'EURO' })).toEqual({
      value: 4,
      currency: undefined,
    });
    expect(valueOf({ value: NaN, currency: 'EUR' })).toEqual({ value: undefined, currency: undefined });
    for (const value of ['1e3', '1.', '.5', '1.2.3', '', 'x1', '1x', true])
      expect(valueOf({ value, currency: 'EUR' })).toEqual({ value: undefined, currency: undefined });
    expect(valueOf({ value: 0, currency: 5 })).toEqual({ value: 0, currency: undefined });
    expect(convert({ gclid: 'G', value: 5, currency: 'eur' })).toStrictEqual({
      gclid: 'G',
      conversionAction: action,
      conversionDateTime: when,
      conversionValue: 5,
      currencyCode: 'EUR',
      orderId: 'm-1',
    });
  });

  it('deduplicates on the order id, else the messageId, hashed past 64 characters', () => {
    const orderOf = (properties: Record<string, unknown>, messageId = 'm-1') => {
      const conversion = convert({ gclid: 'G', ...properties }, { messageId });
      return typeof conversion === 'string' ? conversion : conversion.orderId;
    };
    expect(orderOf({ order_id: 'o-1', orderId: 'o-2' })).toBe('o-1');
    expect(orderOf({ order_id: '', orderId: 'o-2' })).toBe('o-2');
    expect(orderOf({ order_id: 5 })).toBe('m-1');
    expect(orderOf({}, 'x'.repeat(64))).toBe('x'.repeat(64));
    expect(orderOf({}, 'x'.repeat(65))).toBe(sha('x'.repeat(65)));
    expect(orderOf({ order_id: 'o'.repeat(65) })).toBe(sha('o'.repeat(65)));
  });

  it('sends a time ahead of now as now, and adUserData GRANTED only on marketing consent', () => {
    expect(convert({ gclid: 'G' }, {}, correctedSampleTime.getTime() - 1_000)).toStrictEqual({
      gclid: 'G',
      conversionAction: action,
      conversionDateTime: '2026-03-01 11:59:53+00:00',
      orderId: 'm-1',
    });
    expect(convert({ gclid: 'G' }, { context: { consent: { marketing: true } } })).toStrictEqual({
      gclid: 'G',
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
      consent: { adUserData: 'GRANTED' },
    });
    expect(
      convert({ gclid: 'G' }, { context: { consent: { marketing: false, analytics: true } } }),
    ).toStrictEqual({
      gclid: 'G',
      conversionAction: action,
      conversionDateTime: when,
      orderId: 'm-1',
    });
  });
});
