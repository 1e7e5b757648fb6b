import type { TrackingEvent } from '@pipeline/events';
import {
  defined,
  eventTime,
  PAGE_VIEWED,
  pageFields,
  payloadOf,
  SCREEN_VIEWED,
  screenFields,
  userAgentOf,
  userIdOf,
} from './event-fields';
import { correctedSampleTime, outboundOf, sampleEvent, sampleTimestamp } from './testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const pageContext = {
  page: { url: 'https://shop.example/a', path: '/a', title: 'A', referrer: 'https://ref.example/' },
};

describe('the event fields every forwarder reads', () => {
  it('names page and screen views as the vendors without their own calls expect', () => {
    expect(PAGE_VIEWED).toBe('Page Viewed');
    expect(SCREEN_VIEWED).toBe('Screen Viewed');
  });

  it('gives a screen call its name and properties, properties winning; other calls none', () => {
    expect(
      screenFields({ ...base, type: 'screen', name: 'Checkout', properties: { step: 2, name: 'Cart' } }),
    ).toStrictEqual({ name: 'Cart', step: 2 });
    expect(
      screenFields({ ...base, type: 'screen', name: 'Checkout', properties: { step: 2 } }),
    ).toStrictEqual({
      name: 'Checkout',
      step: 2,
    });
    expect(screenFields({ ...base, type: 'screen', name: 'Checkout' })).toStrictEqual({ name: 'Checkout' });
    expect(screenFields({ ...base, type: 'screen', name: '', properties: { step: 2 } })).toStrictEqual({
      step: 2,
    });
    expect(screenFields({ ...base, type: 'screen' })).toStrictEqual({});
    expect(screenFields({ ...base, type: 'page', name: 'Home', properties: { a: 1 } })).toStrictEqual({});
  });

  it('corrects the time by the event’s own sentAt, else the batch’s, else keeps it', () => {
    const track = { ...base, type: 'track' as const, event: 'E' };
    expect(eventTime(outboundOf(track))).toStrictEqual(correctedSampleTime);
    expect(eventTime(outboundOf({ ...track, sentAt: '2026-03-01T12:00:01.000Z' }))).toStrictEqual(
      new Date('2026-03-01T11:59:58.000Z'),
    );
    expect(eventTime(outboundOf(track, { batchSentAt: undefined }))).toStrictEqual(new Date(sampleTimestamp));
  });

  it('takes the user agent the server saw, else the one the client reported', () => {
    const track: TrackingEvent = { ...base, type: 'track', event: 'E', context: { userAgent: 'Client/1' } };
    expect(userAgentOf(outboundOf(track, { userAgent: 'Server/1' }))).toBe('Server/1');
    expect(userAgentOf(outboundOf(track, { userAgent: null }))).toBe('Client/1');
    expect(userAgentOf(outboundOf({ ...base, type: 'track', event: 'E' }, { userAgent: null }))).toBe(
      undefined,
    );
  });

  it('knows a user by a non-empty userId only', () => {
    expect(userIdOf({ ...base, type: 'track', event: 'E', userId: 'u-1' })).toBe('u-1');
    expect(userIdOf({ ...base, type: 'track', event: 'E', userId: '' })).toBe(undefined);
    expect(userIdOf({ ...base, type: 'track', event: 'E', userId: null })).toBe(undefined);
    expect(userIdOf({ ...base, type: 'track', event: 'E', userId: undefined })).toBe(undefined);
  });

  it('reads properties or traits, {} when the call has neither', () => {
    expect(payloadOf({ ...base, type: 'track', event: 'E', properties: { a: 1 } })).toStrictEqual({ a: 1 });
    expect(payloadOf({ ...base, type: 'identify', traits: { b: 2 } })).toStrictEqual({ b: 2 });
    expect(payloadOf({ ...base, type: 'group', groupId: 'g', traits: { c: 3 } })).toStrictEqual({ c: 3 });
    expect(payloadOf({ ...base, type: 'track', event: 'E' })).toStrictEqual({});
    expect(payloadOf({ ...base, type: 'identify' })).toStrictEqual({});
    expect(payloadOf({ ...base, type: 'alias', userId: 'u', previousId: 'p' })).toStrictEqual({});
  });

  it('reads an identify’s traits even when it carries a stray properties key the door kept', () => {
    const { event } = sampleEvent({
      type: 'identify',
      userId: 'u-1',
      traits: { plan: 'pro' },
      properties: { x: 1 },
    });
    expect(payloadOf(event)).toStrictEqual({ plan: 'pro' });
    const alias = sampleEvent({ type: 'alias', userId: 'u-1', previousId: 'p', properties: { x: 1 } });
    expect(payloadOf(alias.event)).toStrictEqual({});
  });

  it('describes a page view by the page call’s name and its page, properties winning', () => {
    expect(pageFields({ ...base, type: 'page', name: 'Home', context: pageContext })).toStrictEqual({
      name: 'Home',
      url: 'https://shop.example/a',
      path: '/a',
      title: 'A',
      referrer: 'https://ref.example/',
    });
    expect(
      pageFields({
        ...base,
        type: 'page',
        context: pageContext,
        properties: {
          url: 'https://shop.example/b',
          path: '/b',
          title: 'B',
          referrer: 'https://other.example/',
        },
      }),
    ).toStrictEqual({
      url: 'https://shop.example/b',
      path: '/b',
      title: 'B',
      referrer: 'https://other.example/',
    });
  });

  it('skips empty and non-text values, falling back to the page context', () => {
    expect(
      pageFields({
        ...base,
        type: 'page',
        name: '',
        context: pageContext,
        properties: { url: '', path: 7, title: null, referrer: '' },
      }),
    ).toStrictEqual({
      url: 'https://shop.example/a',
      path: '/a',
      title: 'A',
      referrer: 'https://ref.example/',
    });
    expect(pageFields({ ...base, type: 'page' })).toStrictEqual({});
  });

  it('takes only the page context of other calls: their properties and names are not the page’s', () => {
    expect(
      pageFields({
        ...base,
        type: 'track',
        event: 'E',
        context: { page: { url: 'https://shop.example/a' } },
        properties: { url: 'https://elsewhere.example/', name: 'N' },
      }),
    ).toStrictEqual({ url: 'https://shop.example/a' });
    expect(
      pageFields({ ...base, type: 'screen', name: 'Checkout', properties: { title: 'T' } }),
    ).toStrictEqual({});
  });

  it('drops undefined values and keeps the other falsy ones', () => {
    expect(defined({ a: undefined, b: null, c: 0, d: '', e: false, f: 'x' })).toStrictEqual({
      b: null,
      c: 0,
      d: '',
      e: false,
      f: 'x',
    });
    expect(Object.keys(defined({ a: undefined, b: 1 }))).toStrictEqual(['b']);
  });
});
