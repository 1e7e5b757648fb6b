import type { TrackingEvent } from '@pipeline/events';
import {
  HUBSPOT_MAX_VALUE_CHARS,
  hubspotContactOf,
  hubspotInputOf,
  hubspotPropertiesOf,
  hubspotPropertyName,
  hubspotValue,
} from './hubspot-mapping';
import { outboundOf, sampleTimestamp } from '../../testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };

describe('HubSpot contact mapping', () => {
  it('names properties after HubSpot’s standard ones, else the trait in snake_case', () => {
    const names: [string, string | undefined][] = [
      ['email', 'email'],
      ['firstName', 'firstname'],
      ['first_name', 'firstname'],
      ['lastName', 'lastname'],
      ['last_name', 'lastname'],
      ['title', 'jobtitle'],
      ['postalCode', 'zip'],
      ['postal_code', 'zip'],
      ['zip', 'zip'],
      ['phone', 'phone'],
      ['planType', 'plan_type'],
      ['utm2Source', 'utm2_source'],
      ['Café Owner', 'cafe_owner'],
      ['__a--b!!c__', 'a_b_c'],
      ['a   b', 'a_b'],
      ['a__b', 'a_b'],
      ['a_-_b_', 'a_b'],
      ['_private', 'private'],
      ['constructor', 'constructor'],
      ['toString', 'to_string'],
      ['1st', undefined],
      ['_9lives', undefined],
      ['!!!', undefined],
      ['', undefined],
    ];
    for (const [trait, name] of names) expect([trait, hubspotPropertyName(trait)]).toEqual([trait, name]);
  });

  it('writes values as text: scalars, arrays of scalars joined by ;, other objects as JSON', () => {
    expect(hubspotValue('text')).toBe('text');
    expect(hubspotValue('')).toBe('');
    expect(hubspotValue(12.5)).toBe('12.5');
    expect(hubspotValue(0)).toBe('0');
    expect(hubspotValue(true)).toBe('true');
    expect(hubspotValue(false)).toBe('false');
    expect(hubspotValue(['a', 1, false])).toBe('a;1;false');
    expect(hubspotValue([])).toBe('');
    expect(hubspotValue(['a', { b: 1 }])).toBe('["a",{"b":1}]');
    expect(hubspotValue(['a', null])).toBe('["a",null]');
    expect(hubspotValue({ b: [1] })).toBe('{"b":[1]}');
    for (const value of [null, undefined, NaN, Infinity, -Infinity])
      expect(hubspotValue(value)).toBe(undefined);
    expect(hubspotValue('x'.repeat(HUBSPOT_MAX_VALUE_CHARS))).toBe('x'.repeat(65_536));
    expect(hubspotValue('x'.repeat(HUBSPOT_MAX_VALUE_CHARS + 1))).toBe(undefined);
  });

  it('maps traits and the parts of an address to property names, dropping what has none', () => {
    expect(
      hubspotPropertiesOf({
        firstName: 'Ada',
        planType: 'pro',
        '1st': 'dropped',
        address: {
          street: '1 Main St',
          city: 'Springfield',
          state: 'IL',
          postalCode: '62701',
          country: 'US',
          unit: 'dropped',
          constructor: 'dropped',
        },
      }),
    ).toEqual(
      new Map<string, unknown>([
        ['firstname', 'Ada'],
        ['plan_type', 'pro'],
        ['address', '1 Main St'],
        ['city', 'Springfield'],
        ['state', 'IL'],
        ['zip', '62701'],
        ['country', 'US'],
      ]),
    );
    expect(hubspotPropertiesOf({ address: { postal_code: '1' } })).toEqual(new Map([['zip', '1']]));
    expect(hubspotPropertiesOf({ address: '1 Main St' })).toEqual(new Map([['address', '1 Main St']]));
    expect(hubspotPropertiesOf({ address: null })).toEqual(new Map([['address', null]]));
    expect(hubspotPropertiesOf({ address: ['a'] })).toEqual(new Map([['address', ['a']]]));
    // Only the address trait is read by parts: another object is one value.
    expect(hubspotPropertiesOf({ shipping: { city: 'Elsewhere' } })).toEqual(
      new Map([['shipping', { city: 'Elsewhere' }]]),
    );
  });

  it('upserts identifies with a valid email; other calls and identifies without one have reasons', () => {
    const identify: TrackingEvent = {
      ...base,
      type: 'identify',
      traits: { email: ' Ada@Example.com ', lastName: 'L' },
    };
    expect(hubspotContactOf(outboundOf(identify))).toEqual({
      email: 'ada@example.com',
      raw: new Map([
        ['email', ' Ada@Example.com '],
        ['lastname', 'L'],
      ]),
    });
    expect(hubspotContactOf(outboundOf({ ...base, type: 'identify', traits: { email: 'nope' } }))).toBe(
      'no_email: HubSpot contacts are upserted by email and this identify has no valid one',
    );
    expect(hubspotContactOf(outboundOf({ ...base, type: 'identify' }))).toBe(
      'no_email: HubSpot contacts are upserted by email and this identify has no valid one',
    );
    expect(
      hubspotContactOf(
        outboundOf({ ...base, type: 'track', event: 'E', properties: { email: 'a@example.com' } }),
      ),
    ).toBe('identify_only: HubSpot contacts are updated from identify calls, not track');
  });

  it('sends only the account’s writable properties, dates as YYYY-MM-DD, the email as the id', () => {
    const types = new Map([
      ['email', 'string'],
      ['firstname', 'string'],
      ['logins', 'number'],
      ['signed_up', 'date'],
      ['renewal', 'date'],
      ['far', 'date'],
      ['year_zero', 'date'],
      ['last_year', 'date'],
      ['before', 'date'],
      ['empty', 'string'],
    ]);
    const raw = new Map<string, unknown>([
      ['email', 'Other@Example.com'],
      ['firstname', 'Ada'],
      ['logins', 7],
      ['signed_up', '2026-01-02T23:30:00-02:00'],
      ['renewal', 'next week'],
      ['far', '+010000-01-01T00:00:00Z'],
      ['year_zero', '0000-06-01T00:00:00Z'],
      ['last_year', '9999-12-31T12:00:00Z'],
      ['before', '-000001-12-31T00:00:00Z'],
      ['empty', null],
      ['unknown_to_the_account', 'x'],
    ]);
    const input = hubspotInputOf('ada@example.com', raw, types);
    expect(input).toStrictEqual({
      idProperty: 'email',
      id: 'ada@example.com',
      properties: {
        firstname: 'Ada',
        logins: '7',
        signed_up: '2026-01-03',
        year_zero: '0000-06-01',
        last_year: '9999-12-31',
        email: 'ada@example.com',
      },
    });
  });
});
