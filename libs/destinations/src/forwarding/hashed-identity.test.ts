import { createHash } from 'node:crypto';
import type { TrackingEvent } from '@pipeline/events';
import {
  clickIdOf,
  emailOf,
  emailOrHashOf,
  hashedOnce,
  normalizedEmail,
  personField,
  sha256Hex,
  traitsOf,
} from './hashed-identity';
import { sampleTimestamp } from './testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
/** A track call whose client attached the person's traits to its context, as Segment's libraries do. */
const tracked = (properties: Record<string, unknown>, traits?: unknown): TrackingEvent =>
  ({ ...base, type: 'track', event: 'E', properties, context: { traits } }) as TrackingEvent;
const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const HEX = 'a'.repeat(32) + '0123456789abcdef'.repeat(2);

describe('the identity the ad platforms and CRMs match on', () => {
  it('hashes with SHA-256 as lowercase hex, once', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashedOnce(HEX)).toBe(HEX);
    expect(hashedOnce('ada@example.com')).toBe(digest('ada@example.com'));
    // Not a hash: upper case, one digit short or over, other characters around it.
    for (const text of [HEX.toUpperCase(), HEX.slice(1), `${HEX}0`, `x${HEX}`, `${HEX.slice(1)}g`])
      expect(hashedOnce(text)).toBe(digest(text));
  });

  it('takes plausible addresses, trimmed and lowercased', () => {
    expect(normalizedEmail('  Ada@Example.COM ')).toBe('ada@example.com');
    expect(normalizedEmail('a.b+c@mail.example.org')).toBe('a.b+c@mail.example.org');
    for (const value of [
      'ada@example',
      '@example.com',
      'ada@',
      'ada@.com',
      'ada@example.',
      'a da@example.com',
      'ada@exa mple.com',
      'ada@example.c om',
      'a@b@example.com',
      'ada@ex@ample.com',
      'ada@example.com@',
      '',
      42,
      null,
      undefined,
    ])
      expect(normalizedEmail(value)).toBe(undefined);
  });

  it('reads traits from an identify, else from context.traits when they are an object', () => {
    expect(traitsOf({ ...base, type: 'identify', traits: { a: 1 } })).toEqual({ a: 1 });
    const identify = { ...base, type: 'identify', traits: { a: 1 }, context: { traits: { b: 2 } } };
    expect(traitsOf(identify as TrackingEvent)).toEqual({ a: 1 });
    expect(traitsOf(tracked({}, { b: 2 }))).toEqual({ b: 2 });
    for (const traits of [null, 'text', ['a'], 3]) expect(traitsOf(tracked({}, traits))).toEqual({});
    expect(traitsOf({ ...base, type: 'track', event: 'E' })).toEqual({});
  });

  it('finds a person field in properties first, then traits, trimmed, first field name first', () => {
    const event = tracked(
      { phone: ' 555 ', first_name: 'Prop' },
      { phone: '777', firstName: 'Trait', email: 'e@example.com' },
    );
    expect(personField(event, 'phone')).toBe('555');
    expect(personField(event, 'firstName', 'first_name')).toBe('Prop');
    expect(personField(event, 'email')).toBe('e@example.com');
    expect(personField(event, 'lastName')).toBe(undefined);
  });

  it('skips blank and non-text values and keys a record only inherits', () => {
    const inherited = Object.create({ email: 'inherited@example.com' }) as Record<string, unknown>;
    expect(personField({ ...base, type: 'track', event: 'E', properties: inherited }, 'email')).toBe(
      undefined,
    );
    const event = tracked({ phone: '   ', name: 7 }, { phone: '555', name: 'Ada' });
    expect(personField(event, 'phone')).toBe('555');
    expect(personField(event, 'name')).toBe('Ada');
  });

  it('reads an identify’s traits only: its stray properties are not the person’s', () => {
    const identify = {
      ...base,
      type: 'identify',
      traits: { email: 'trait@example.com' },
      properties: { email: 'prop@example.com', phone: '555' },
    } as TrackingEvent;
    expect(personField(identify, 'email')).toBe('trait@example.com');
    expect(personField(identify, 'phone')).toBe(undefined);
  });

  it('normalises the email; a hashed one is lowercased and kept for hashing as it is', () => {
    const withEmail = (email: unknown): TrackingEvent => ({ ...base, type: 'identify', traits: { email } });
    expect(emailOf(withEmail(' Ada@Example.com'))).toBe('ada@example.com');
    expect(emailOf(withEmail('not an email'))).toBe(undefined);
    expect(emailOf(withEmail(HEX))).toBe(undefined);
    expect(emailOrHashOf(withEmail(HEX.toUpperCase()))).toBe(HEX);
    expect(emailOrHashOf(withEmail(' Ada@Example.com'))).toBe('ada@example.com');
    expect(emailOrHashOf(withEmail(`x${HEX}`))).toBe(undefined);
    expect(emailOrHashOf(withEmail(`${HEX}0`))).toBe(undefined);
    expect(emailOrHashOf(withEmail('not an email'))).toBe(undefined);
    expect(emailOrHashOf({ ...base, type: 'identify' })).toBe(undefined);
  });

  it('takes a click id captured by the client, else from the properties, else from the page URL', () => {
    const event = (
      context: Record<string, unknown>,
      properties: Record<string, unknown> = {},
    ): TrackingEvent => ({ ...base, type: 'track', event: 'E', context, properties }) as TrackingEvent;
    const url = 'https://shop.example/?gclid=from-url&fbclid=fb';
    expect(
      clickIdOf(event({ clickId: { gclid: 'captured' }, page: { url } }, { gclid: 'prop' }), 'gclid'),
    ).toBe('captured');
    expect(clickIdOf(event({ clickId: { gclid: '' }, page: { url } }, { gclid: 'prop' }), 'gclid')).toBe(
      'prop',
    );
    expect(clickIdOf(event({ page: { url } }, { gclid: '' }), 'gclid')).toBe('from-url');
    expect(clickIdOf(event({ page: { url } }, { gclid: 5 }), 'gclid')).toBe('from-url');
    expect(clickIdOf(event({ page: { url } }), 'fbclid')).toBe('fb');
    expect(clickIdOf(event({ page: { url } }), 'wbraid')).toBe(undefined);
    expect(clickIdOf(event({ page: { url: 'https://shop.example/?gclid=' } }), 'gclid')).toBe(undefined);
    expect(clickIdOf(event({ page: { url: 'not a url?gclid=x' } }), 'gclid')).toBe(undefined);
    expect(clickIdOf(event({}), 'gclid')).toBe(undefined);
    expect(clickIdOf({ ...base, type: 'track', event: 'E' }, 'gclid')).toBe(undefined);
  });
});
