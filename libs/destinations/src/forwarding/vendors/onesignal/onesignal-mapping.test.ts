import type { TrackingEvent } from '@pipeline/events';
import { uuidOf } from '../../dedupe-keys';
import { oneSignalItemOf, tagsOf } from './onesignal-mapping';
import { correctedSampleTime, outboundOf, sampleTimestamp } from '../../testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const common = {
  external_id: 'u-1',
  timestamp: correctedSampleTime.toISOString(),
  idempotency_key: uuidOf('m-1'),
};
const map = (event: TrackingEvent) => oneSignalItemOf(outboundOf(event));
const propertiesOf = (traits: Record<string, unknown> | undefined, context: Record<string, unknown> = {}) => {
  const item = map({ ...base, type: 'identify', ...(traits ? { traits } : {}), context } as TrackingEvent);
  return typeof item === 'string' || item.endpoint !== 'update_user' ? item : item.update.body.properties;
};

describe('OneSignal item mapping', () => {
  it('makes tags of text, numbers and booleans, and leaves nested values out', () => {
    expect({
      ...tagsOf({ a: 'x', b: 2, c: false, d: null, e: { f: 1 }, g: ['h'], i: undefined }),
    }).toStrictEqual({
      a: 'x',
      b: '2',
      c: 'false',
    });
    const tags = tagsOf(JSON.parse('{"__proto__":"p","constructor":"c"}'));
    expect(Object.getPrototypeOf(tags)).toBe(null);
    expect(Object.entries(tags)).toEqual([
      ['__proto__', 'p'],
      ['constructor', 'c'],
    ]);
  });

  it('keeps at most 100 tags, counting only those it keeps', () => {
    const traits = (count: number) =>
      Object.fromEntries(Array.from({ length: count }, (_, i) => [`t${i}`, String(i)]));
    expect(Object.keys(tagsOf(traits(100)))).toHaveLength(100);
    const kept = tagsOf({ nested: { a: 1 }, ...traits(101) });
    expect(Object.keys(kept)).toEqual(Object.keys(traits(100)));
  });

  it('maps track, page and screen calls to custom events', () => {
    expect(map({ ...base, type: 'track', event: 'E', properties: { a: 1 } })).toStrictEqual({
      endpoint: 'custom_events',
      event: { ...common, name: 'E', properties: { a: 1 } },
    });
    expect(map({ ...base, type: 'track', event: 'E' })).toStrictEqual({
      endpoint: 'custom_events',
      event: { ...common, name: 'E', properties: {} },
    });
    expect(
      map({
        ...base,
        type: 'page',
        name: 'Home',
        properties: { v: 'b' },
        context: { page: { url: 'https://shop.example/' } },
      }),
    ).toStrictEqual({
      endpoint: 'custom_events',
      event: {
        ...common,
        name: 'Page Viewed',
        properties: { name: 'Home', url: 'https://shop.example/', v: 'b' },
      },
    });
    expect(map({ ...base, type: 'page' })).toStrictEqual({
      endpoint: 'custom_events',
      event: { ...common, name: 'Page Viewed', properties: {} },
    });
    expect(map({ ...base, type: 'screen', name: 'Cart', properties: { step: 2 } })).toStrictEqual({
      endpoint: 'custom_events',
      event: { ...common, name: 'Screen Viewed', properties: { name: 'Cart', step: 2 } },
    });
  });

  it('maps identify to the user’s tags and language (ISO 639-1), from the traits, else the context', () => {
    // toEqual: the tags are a null-prototype record.
    expect(map({ ...base, type: 'identify', traits: { plan: 'pro', language: 'en-US', logins: 3 } })).toEqual(
      {
        endpoint: 'update_user',
        update: {
          externalId: 'u-1',
          body: { properties: { tags: { plan: 'pro', logins: '3' }, language: 'en' } },
        },
      },
    );
    expect(propertiesOf({ language: 'PT_br' })).toEqual({ tags: {}, language: 'pt' });
    expect(propertiesOf({ language: 'De' })).toEqual({ tags: {}, language: 'de' });
    expect(propertiesOf({ language: 'fr-' })).toEqual({ tags: {}, language: 'fr' });
    expect(propertiesOf({ language: 'english' }, { language: 'es-MX' })).toEqual({
      tags: {},
      language: 'es',
    });
    expect(propertiesOf(undefined, { locale: 'it_IT' })).toEqual({ tags: {}, language: 'it' });
    expect(propertiesOf({}, { language: 'nl', locale: 'it_IT' })).toEqual({ tags: {}, language: 'nl' });
    for (const language of ['eng', 'e', 'x-en', 'en.US', '12', ''])
      expect(propertiesOf({ language }, { locale: language })).toEqual({ tags: {} });
    expect(propertiesOf({ language: 5 })).toEqual({ tags: {} });
    expect(propertiesOf({ language: ['en'] })).toEqual({ tags: {} });
    expect(map({ ...base, type: 'identify', traits: { plan: 'pro' } })).toEqual({
      endpoint: 'update_user',
      update: { externalId: 'u-1', body: { properties: { tags: { plan: 'pro' } } } },
    });
  });

  it('has reasons for anonymous events, group and alias', () => {
    expect(map({ ...base, userId: null, type: 'track', event: 'E' })).toBe(
      'anonymous: OneSignal events and tags need the user’s external_id',
    );
    expect(map({ ...base, type: 'group', groupId: 'g' })).toBe(
      'group_not_supported: OneSignal has no group or account entity',
    );
    expect(map({ ...base, type: 'alias', previousId: 'p' })).toBe(
      'alias_not_supported: OneSignal aliases are set on its identity API, one user at a time',
    );
  });
});
