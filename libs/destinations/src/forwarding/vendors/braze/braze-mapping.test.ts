import type { TrackingEvent } from '@pipeline/events';
import { attributesOf, brazeObjectsOf, type BrazeMapping } from './braze-mapping';
import { correctedSampleTime, outboundOf, sampleTimestamp } from '../../testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const time = correctedSampleTime.toISOString();
const known: BrazeMapping = { anonymousProfiles: false };
const map = (event: TrackingEvent, mapping: BrazeMapping = known) =>
  brazeObjectsOf(outboundOf(event), mapping);
const order = (properties: Record<string, unknown>): TrackingEvent => ({
  ...base,
  type: 'track',
  event: 'Order Completed',
  properties,
});

describe('Braze object mapping', () => {
  it('maps Segment trait names to Braze’s standard attributes, the birthday as a date', () => {
    expect({
      ...attributesOf({
        email: 'a@example.com',
        firstName: 'Ada',
        first_name: 'Ada2',
        lastName: 'L',
        last_name: 'L2',
        phone: '+1555',
        gender: 'f',
        birthday: '1815-12-10T00:00:00Z',
        city: 'London',
        country: 'UK',
        language: 'en',
        plan: 'pro',
      }),
    }).toStrictEqual({
      email: 'a@example.com',
      first_name: 'Ada2',
      last_name: 'L2',
      phone: '+1555',
      gender: 'f',
      dob: '1815-12-10',
      home_city: 'London',
      country: 'UK',
      language: 'en',
      plan: 'pro',
    });
    expect({ ...attributesOf({ birthday: 19_000_000 }) }).toStrictEqual({ dob: 19_000_000 });
  });

  it('carries traits named like Object’s own members as attributes of that name', () => {
    const attributes = attributesOf(JSON.parse('{"constructor":"c","toString":"t","__proto__":"p"}'));
    expect(Object.getPrototypeOf(attributes)).toBe(null);
    expect(Object.entries(attributes)).toEqual([
      ['constructor', 'c'],
      ['toString', 't'],
      ['__proto__', 'p'],
    ]);
  });

  it('skips anonymous events unless alias-only profiles are on, then sends them by alias', () => {
    const anonymous: TrackingEvent = {
      ...base,
      userId: null,
      type: 'track',
      event: 'E',
      properties: { a: 1 },
    };
    expect(map(anonymous)).toBe(
      'anonymous: Braze bills each alias-only profile; enable config.global.anonymousProfiles to send them',
    );
    expect(map(anonymous, { anonymousProfiles: true })).toStrictEqual([
      {
        array: 'events',
        object: {
          user_alias: { alias_name: 'anon-1', alias_label: 'anonymous_id' },
          _update_existing_only: false,
          name: 'E',
          time,
          properties: { a: 1 },
        },
      },
    ]);
  });

  it('maps track, page and screen calls to events, with the app id when there is one', () => {
    const app: BrazeMapping = { appId: 'app-1', anonymousProfiles: false };
    expect(map({ ...base, type: 'track', event: 'E', properties: { a: 1 } }, app)).toStrictEqual([
      {
        array: 'events',
        object: { external_id: 'u-1', app_id: 'app-1', name: 'E', time, properties: { a: 1 } },
      },
    ]);
    expect(map({ ...base, type: 'track', event: 'E' })).toStrictEqual([
      { array: 'events', object: { external_id: 'u-1', name: 'E', time, properties: {} } },
    ]);
    expect(
      map(
        {
          ...base,
          type: 'page',
          name: 'Home',
          properties: { v: 'b' },
          context: { page: { url: 'https://shop.example/' } },
        },
        app,
      ),
    ).toStrictEqual([
      {
        array: 'events',
        object: {
          external_id: 'u-1',
          app_id: 'app-1',
          name: 'Page Viewed',
          time,
          properties: { name: 'Home', url: 'https://shop.example/', v: 'b' },
        },
      },
    ]);
    expect(map({ ...base, type: 'page' })).toStrictEqual([
      { array: 'events', object: { external_id: 'u-1', name: 'Page Viewed', time, properties: {} } },
    ]);
    expect(map({ ...base, type: 'screen', name: 'Cart', properties: { step: 2 } }, app)).toStrictEqual([
      {
        array: 'events',
        object: {
          external_id: 'u-1',
          app_id: 'app-1',
          name: 'Screen Viewed',
          time,
          properties: { name: 'Cart', step: 2 },
        },
      },
    ]);
  });

  it('maps identify to attributes, the identifier winning over a trait of its name; group and alias have reasons', () => {
    expect(
      map({ ...base, type: 'identify', traits: { external_id: 'someone-else', firstName: 'Ada' } }),
    ).toStrictEqual([{ array: 'attributes', object: { external_id: 'u-1', first_name: 'Ada' } }]);
    expect(map({ ...base, type: 'identify' })).toStrictEqual([
      { array: 'attributes', object: { external_id: 'u-1' } },
    ]);
    expect(map({ ...base, type: 'group', groupId: 'g' })).toBe(
      'group_not_supported: Braze has no group or account entity',
    );
    expect(map({ ...base, type: 'alias', previousId: 'p' })).toBe(
      'alias_not_supported: merging profiles is Braze’s /users/identify, not /users/track',
    );
  });

  it('turns an Order Completed’s products with an id and a price into purchases', () => {
    const purchases = map(
      order({
        currency: 'eur',
        coupon: 'X',
        products: [
          { product_id: 'p-1', sku: 's-1', id: 'i-1', price: 10, quantity: 2, name: 'One' },
          { product_id: '', sku: 's-2', price: '2.5', quantity: 1.5 },
          { sku: '', id: 'i-3', price: 0 },
          { product_id: 'no-price', price: 'free' },
          { name: 'no id', price: 1 },
          { product_id: 7, price: 1 },
          null,
          'p-4',
        ],
      }),
      { appId: 'app-1', anonymousProfiles: false },
    );
    const common = { external_id: 'u-1', app_id: 'app-1', currency: 'EUR', time };
    expect(purchases).toStrictEqual([
      {
        array: 'purchases',
        object: { ...common, product_id: 'p-1', price: 10, quantity: 2, properties: { name: 'One' } },
      },
      {
        array: 'purchases',
        object: { ...common, product_id: 's-2', price: 2.5, quantity: 1, properties: {} },
      },
      { array: 'purchases', object: { ...common, product_id: 'i-3', price: 0, quantity: 1, properties: {} } },
    ]);
  });

  it('prices purchases in USD when the order names no currency, for alias-only profiles too', () => {
    expect(
      map(
        {
          ...base,
          userId: null,
          type: 'track',
          event: 'Order Completed',
          properties: { currency: 5, products: [{ id: 'i-1', price: 3 }] },
        },
        { anonymousProfiles: true },
      ),
    ).toStrictEqual([
      {
        array: 'purchases',
        object: {
          user_alias: { alias_name: 'anon-1', alias_label: 'anonymous_id' },
          _update_existing_only: false,
          product_id: 'i-1',
          currency: 'USD',
          price: 3,
          quantity: 1,
          time,
          properties: {},
        },
      },
    ]);
  });

  it('sends an order without purchasable products, or another event with products, as an event', () => {
    for (const products of [[{ name: 'no id', price: 1 }], 'p-1', undefined]) {
      const properties = products === undefined ? {} : { products };
      expect(map(order(properties))).toStrictEqual([
        { array: 'events', object: { external_id: 'u-1', name: 'Order Completed', time, properties } },
      ]);
    }
    const products = [{ id: 'i-1', price: 3 }];
    expect(map({ ...base, type: 'track', event: 'Product Added', properties: { products } })).toStrictEqual([
      {
        array: 'events',
        object: { external_id: 'u-1', name: 'Product Added', time, properties: { products } },
      },
    ]);
  });
});
