import fc from 'fast-check';
import { normalizeEvent, type TrackingEvent } from '@pipeline/events';
import { callNameOf, eventOfRow } from './stored-events';

// The one inverse of the warehouse normalizer: an event written by normalizeEvent and read back
// is the event as the tracking API received it (the few things a row does not keep are named).

const receipt = { receivedAt: new Date('2026-11-20T10:00:05.000Z'), ip: null, userAgent: null };

describe('eventOfRow', () => {
  it('gives back a track call with every typed context member and the extra ones', () => {
    const sent = {
      type: 'track',
      event: 'Order Completed',
      messageId: 'm-1',
      anonymousId: 'a-1',
      userId: 'u-1',
      timestamp: '2026-11-20T10:00:00.000Z',
      sentAt: '2026-11-20T10:00:01.000Z',
      properties: { order_id: 'o-1', nested: { a: [1, 'b', null] } },
      context: {
        source: 'web',
        library: { name: 'analytics.js', version: '5.0.0' },
        session: { id: 's-1' },
        page: { url: 'https://x.io/a', path: '/a', title: 'A', referrer: 'https://r.io' },
        screen: { width: 1280, height: 720 },
        campaign: { source: 'news', medium: 'email', name: 'spring', term: 't', content: 'c' },
        clickId: { gclid: 'g-1' },
        consent: { categoryPreferences: { ads: true } },
        browser: 'Firefox',
        os: 'Linux',
        device: 'desktop',
        language: 'fr',
        locale: 'fr-FR',
        userAgent: 'Mozilla/5.0',
        app: { build: 7 },
        ip: '192.0.2.1',
      },
    } as TrackingEvent;
    const { table, row } = normalizeEvent(sent, { ...receipt, ip: '198.51.100.9' });
    expect(table).toBe('events');
    expect(eventOfRow(table, row)).toEqual(sent);
    expect(callNameOf(eventOfRow(table, row))).toBe('Order Completed');
  });

  it('gives the server’s address as context.ip when the client sent none, and Segment’s campaign names', () => {
    const sent = {
      type: 'page',
      messageId: 'p-1',
      anonymousId: 'a-1',
      timestamp: '2026-11-20T10:00:00.000Z',
      context: { campaign: { utm_source: 'news' } },
    } as TrackingEvent;
    const { table, row } = normalizeEvent(sent, { ...receipt, ip: '198.51.100.9', userAgent: 'curl/8' });
    expect(eventOfRow(table, row)).toEqual({
      type: 'page',
      messageId: 'p-1',
      anonymousId: 'a-1',
      timestamp: '2026-11-20T10:00:00.000Z',
      properties: {},
      context: { campaign: { source: 'news' }, userAgent: 'curl/8', ip: '198.51.100.9' },
    });
    expect(callNameOf(eventOfRow(table, row))).toBeNull();
  });

  it.each([
    [{ type: 'identify', userId: 'u-1', traits: { email: 'a@x.io' } }, 'users'],
    [{ type: 'group', userId: 'u-1', groupId: 'g-1', traits: { seats: 3 } }, 'groups'],
    [{ type: 'alias', userId: 'u-1', previousId: 'a-9' }, 'aliases'],
    [{ type: 'screen', anonymousId: 'a-1', name: 'Cart', properties: { n: 1 } }, 'events'],
  ])('gives back %j from %s', (fields, expectedTable) => {
    const sent = { ...fields, messageId: 'x-1', timestamp: '2026-11-20T10:00:00.000Z' } as TrackingEvent;
    const { table, row } = normalizeEvent(sent, receipt);
    expect(table).toBe(expectedTable);
    expect(eventOfRow(table, row)).toEqual(sent);
  });

  it('reads rows as to_jsonb writes them: times as text with an offset', () => {
    const event = eventOfRow('users', {
      message_id: 'm',
      user_id: 'u',
      timestamp: '2026-11-20T10:00:00.123456+00:00',
      original_timestamp: '2026-11-20T11:00:00.5+01:00',
      sent_at: null,
      traits: null,
    });
    expect(event).toEqual({
      type: 'identify',
      messageId: 'm',
      userId: 'u',
      timestamp: '2026-11-20T10:00:00.500Z',
      traits: {},
    });
  });

  // Any member name JSON and PostgreSQL's jsonb hold (no U+0000), __proto__ and pointer
  // characters included, comes back as data, never as a prototype.
  const key = fc.oneof(
    fc.constantFrom('__proto__', '~', '/', '~1', 'a/b~0', 'constructor', 'toString', ''),
    fc.string({ unit: 'binary', maxLength: 12 }).filter((k) => !k.includes('\u0000')),
  );
  const value = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 8 }),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
  );
  /** Context members with a column of their own (and ip, which the server's address fills). */
  const typedContext = new Set(
    'source library session page screen campaign clickId consent browser os device language locale userAgent ip'.split(
      ' ',
    ),
  );
  const members = fc.uniqueArray(fc.tuple(key, value), { selector: ([k]) => k, maxLength: 8 });

  it('keeps every property and context member, whatever its name', () => {
    fc.assert(
      fc.property(members, members, (properties, extra) => {
        const context = Object.fromEntries(extra.filter(([k]) => !typedContext.has(k)));
        const sent = {
          type: 'track',
          event: 'E',
          messageId: 'm',
          anonymousId: 'a',
          timestamp: '2026-11-20T10:00:00.000Z',
          properties: Object.fromEntries(properties),
          context,
        } as TrackingEvent;
        const { table, row } = normalizeEvent(sent, receipt);
        // Through JSON, as the warehouse stores and returns it.
        const back = eventOfRow(table, JSON.parse(JSON.stringify(row)) as Record<string, unknown>);
        const expected = { ...sent } as Record<string, unknown>;
        // An empty context is stored as none.
        if (Object.keys(context).length === 0) delete expected.context;
        expect(back).toEqual(expected);
        expect(Object.getPrototypeOf(back.properties)).toBe(Object.prototype);
      }),
      { numRuns: 300 },
    );
  });
});
