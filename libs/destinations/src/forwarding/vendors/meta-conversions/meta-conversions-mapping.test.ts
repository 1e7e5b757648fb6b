import { createHash } from 'node:crypto';
import type { TrackingEvent } from '@pipeline/events';
import {
  META_MAX_AGE_MS,
  metaPhone,
  metaServerEventOf,
  metaStandardEvents,
} from './meta-conversions-mapping';
import { correctedSampleTime, outboundOf, sampleReceipt, sampleTimestamp } from '../../testing/sample-events';

const sha = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const time = correctedSampleTime.getTime();
const seconds = Math.floor(time / 1000);
const later = time + 60_000;
const url = 'https://shop.example/a';
const userData = {
  external_id: [sha('u-1')],
  client_ip_address: '198.51.100.7',
  client_user_agent: sampleReceipt.userAgent,
};

function serverEvent(
  fields: Partial<TrackingEvent> & Record<string, unknown>,
  receipt: Parameters<typeof outboundOf>[1] = {},
  now = later,
) {
  const event = { ...base, type: 'track', event: 'Custom', ...fields } as TrackingEvent;
  return metaServerEventOf(outboundOf(event, receipt), now);
}

describe('Meta Conversions API event mapping', () => {
  it('normalises phones to digits without leading zeros', () => {
    expect(metaPhone('+1 (415) 555-0100')).toBe('14155550100');
    expect(metaPhone('0044 20 7946 0000')).toBe('442079460000');
    expect(metaPhone('+0')).toBe(undefined);
    expect(metaPhone('---')).toBe(undefined);
  });

  it('sends Segment’s e-commerce names as Meta’s standard events, others as they are', () => {
    const nameOf = (fields: Partial<TrackingEvent> & Record<string, unknown>) => {
      const mapped = serverEvent(fields);
      return typeof mapped === 'string' ? mapped : mapped.event_name;
    };
    const standard: [string, string][] = [
      ['Order Completed', 'Purchase'],
      ['Product Added', 'AddToCart'],
      ['Product Viewed', 'ViewContent'],
      ['Checkout Started', 'InitiateCheckout'],
      ['Products Searched', 'Search'],
      ['Payment Info Entered', 'AddPaymentInfo'],
      ['Product Added to Wishlist', 'AddToWishlist'],
      ['Signed Up', 'CompleteRegistration'],
    ];
    for (const [segment, meta] of standard)
      expect([segment, nameOf({ event: segment, properties: { value: 1 } })]).toEqual([segment, meta]);
    expect(Object.keys(metaStandardEvents)).toEqual(standard.map(([segment]) => segment));
    expect(nameOf({ event: 'Custom Thing' })).toBe('Custom Thing');
    expect(nameOf({ event: 'constructor' })).toBe('constructor');
    expect(nameOf({ event: 'toString' })).toBe('toString');
    expect(nameOf({ type: 'page', event: undefined })).toBe('PageView');
    expect(nameOf({ event: '  ' })).toBe('no_event_name');
    for (const type of ['screen', 'identify', 'group', 'alias'] as const)
      expect(nameOf({ type, event: undefined })).toBe(
        `${type}_not_supported: the Conversions API takes track and page calls`,
      );
  });

  it('maps a track call with everything Meta matches on, hashed, and the receipt unhashed', () => {
    expect(
      serverEvent({
        properties: {
          email: ' Ada@Example.com ',
          phone: '+44 020 7946 0000',
          firstName: 'Ada',
          last_name: 'LOVELACE',
        },
        context: { page: { url }, clickId: { fbc: 'fb.1.1.abc', fbp: 'fb.1.2.def', fbclid: 'ignored' } },
      }),
    ).toStrictEqual({
      event_name: 'Custom',
      event_time: seconds,
      event_id: 'm-1',
      action_source: 'website',
      event_source_url: url,
      user_data: {
        ...userData,
        em: [sha('ada@example.com')],
        ph: [sha('4402079460000')],
        fn: [sha('ada')],
        ln: [sha('lovelace')],
        fbc: 'fb.1.1.abc',
        fbp: 'fb.1.2.def',
      },
    });
  });

  it('builds fbc from an fbclid, takes the anonymous id as external id, and hashes nothing twice', () => {
    const hashedEmail = sha('someone@example.com');
    expect(
      serverEvent(
        {
          userId: null,
          properties: { email: hashedEmail, first_name: 'Ada', lastName: 'Byron' },
          context: { page: { url: `${url}?fbclid=xyz` } },
        },
        { ip: null, userAgent: null },
      ),
    ).toStrictEqual({
      event_name: 'Custom',
      event_time: seconds,
      event_id: 'm-1',
      action_source: 'other',
      event_source_url: `${url}?fbclid=xyz`,
      user_data: {
        em: [hashedEmail],
        fn: [sha('ada')],
        ln: [sha('byron')],
        external_id: [sha('anon-1')],
        fbc: `fb.1.${time}.xyz`,
      },
    });
    expect(serverEvent({ context: { userAgent: 'Client/1' } }, { userAgent: null })).toStrictEqual({
      event_name: 'Custom',
      event_time: seconds,
      event_id: 'm-1',
      action_source: 'other',
      user_data: { ...userData, client_user_agent: 'Client/1' },
    });
    expect(serverEvent({ userId: null, anonymousId: undefined, properties: { phone: '---' } })).toStrictEqual(
      {
        event_name: 'Custom',
        event_time: seconds,
        event_id: 'm-1',
        action_source: 'other',
        user_data: { client_ip_address: '198.51.100.7', client_user_agent: sampleReceipt.userAgent },
      },
    );
  });

  it('maps a page call to a website PageView when it has a URL and a user agent', () => {
    expect(serverEvent({ type: 'page', event: undefined, context: { page: { url } } })).toStrictEqual({
      event_name: 'PageView',
      event_time: seconds,
      event_id: 'm-1',
      action_source: 'website',
      event_source_url: url,
      user_data: userData,
    });
  });

  it('sends value with a currency, USD for a Purchase; order id and content ids', () => {
    const customOf = (fields: Partial<TrackingEvent> & Record<string, unknown>) => {
      const mapped = serverEvent(fields);
      return typeof mapped === 'string' ? mapped : mapped.custom_data;
    };
    expect(
      customOf({
        event: 'Order Completed',
        properties: {
          value: 10,
          revenue: 20,
          order_id: 'o-1',
          orderId: 'o-2',
          products: [
            { product_id: 'p-1', sku: 's-1' },
            { product_id: '', sku: 's-2' },
            { id: 'i-3' },
            { id: 4 },
            null,
            'p',
          ],
        },
      }),
    ).toStrictEqual({ value: 10, currency: 'USD', order_id: 'o-1', content_ids: ['p-1', 's-2', 'i-3'] });
    expect(
      customOf({ properties: { revenue: '20.50', total: 30, currency: ' eur ', orderId: 'o-2' } }),
    ).toStrictEqual({
      value: 20.5,
      currency: 'EUR',
      order_id: 'o-2',
    });
    expect(
      customOf({ properties: { value: 'x', total: ' -3 ', currency: 'gbp', order_id: '' } }),
    ).toStrictEqual({
      value: -3,
      currency: 'GBP',
    });
    // Meta needs both: a value without a currency goes without either.
    expect(customOf({ properties: { value: 5, currency: 'EURO' } })).toBe(undefined);
    expect(customOf({ properties: { currency: 'EUR', products: [] } })).toBe(undefined);
    expect(customOf({ properties: { value: Infinity, total: 0, currency: 'EUR' } })).toStrictEqual({
      value: 0,
      currency: 'EUR',
    });
    for (const value of ['1e3', '1.', '.5', '', '1x', 'x1', true])
      expect(customOf({ properties: { value, currency: 'EUR' } })).toBe(undefined);
    expect(customOf({ properties: { products: [{ sku: 's-1' }] } })).toStrictEqual({ content_ids: ['s-1'] });
    expect(customOf({ properties: { products: 's-1' } })).toBe(undefined);
  });

  it('skips a Purchase without a value, and events past 7 days (not one a moment younger)', () => {
    expect(serverEvent({ event: 'Order Completed', properties: { currency: 'EUR' } })).toBe(
      'purchase_without_value: Meta requires value and currency on a Purchase',
    );
    expect(serverEvent({}, {}, time + META_MAX_AGE_MS + 1)).toBe(
      'too_old: the Conversions API refuses events more than 7 days old',
    );
    expect(serverEvent({}, {}, time + META_MAX_AGE_MS)).toMatchObject({
      event_time: seconds,
    });
    expect(META_MAX_AGE_MS).toBe(604_740_000);
  });

  it('sends a time ahead of now as now', () => {
    expect(serverEvent({}, {}, time - 1_500)).toMatchObject({ event_time: seconds - 2 });
  });
});
