import { eventLimits, validateEvent } from '@pipeline/events';
import { buildEvent, type Call, type Envelope } from './event-builder';
import { library, limits } from './library';

const envelope = (): Envelope => ({
  messageId: '6f1c1b1e-8a43-4f7e-9d39-5a3b2f1f0c11',
  timestamp: '2026-03-01T12:00:00.000Z',
  anonymousId: 'anon-1',
  userId: null,
  sessionId: '1772366400000',
  context: {
    source: 'web',
    library: { ...library },
    session: { id: '1772366400000' },
    page: {
      url: 'https://shop.example.com/cart?x=1',
      path: '/cart',
      title: 'Cart',
      referrer: '',
      search: '?x=1',
    },
    screen: { width: 1920, height: 1080 },
    campaign: { utm_source: 'news' },
    clickId: { gclid: 'abc' },
    browser: 'Chrome 120',
    os: 'macOS 10.15.7',
    device: 'desktop',
    language: 'en',
    locale: 'en-US',
    userAgent: 'Mozilla/5.0',
  } as Envelope['context'],
});

const valid: Call[] = [
  {
    type: 'track',
    event: 'Order Completed',
    properties: { total: 12.5, at: new Date('2026-01-01T00:00:00Z') },
  },
  { type: 'page' },
  { type: 'page', category: 'Docs', name: 'Setup', properties: { title: 'Custom' } },
  { type: 'identify', userId: 'user-1', traits: { plan: 'pro' } },
  { type: 'identify', userId: 42 },
  { type: 'group', groupId: 'acme', traits: { seats: 5 } },
  { type: 'alias', userId: 'user-1', previousId: 'anon-1' },
];

describe('buildEvent', () => {
  it('repeats the limits of @pipeline/events, which the bundle may not import', () => {
    expect(limits).toMatchObject({
      maxEventBytes: eventLimits.maxEventBytes,
      maxEventNameLength: eventLimits.maxEventNameLength,
      maxIdLength: eventLimits.maxIdLength,
      maxBatchSize: eventLimits.maxBatchSize,
    });
  });

  it.each(valid.map((call) => [`${call.type} ${JSON.stringify(call).slice(0, 60)}`, call] as const))(
    'builds an event the server accepts: %s',
    (_name, call) => {
      const built = buildEvent(call, { ...envelope(), userId: 'user-1' });
      if (!built.ok) throw new Error(built.error);
      expect(validateEvent(built.event)).toEqual({ valid: true, event: built.event });
      expect(built.event).toMatchObject({
        type: call.type,
        messageId: envelope().messageId,
        timestamp: '2026-03-01T12:00:00.000Z',
        anonymousId: 'anon-1',
        sessionId: '1772366400000',
        context: {
          source: 'web',
          library: { name: 'pipeline-web-tracking' },
          session: { id: '1772366400000' },
        },
      });
    },
  );

  it("gives page events Segment's page properties, which the caller may override", () => {
    const built = buildEvent(valid[2]!, envelope());
    expect(built.ok && built.event).toMatchObject({
      name: 'Docs Setup',
      properties: {
        url: 'https://shop.example.com/cart?x=1',
        path: '/cart',
        referrer: '',
        search: '?x=1',
        title: 'Custom',
        name: 'Setup',
        category: 'Docs',
      },
    });
  });

  it('copies the arguments as JSON: later changes by the site do not reach the queued event', () => {
    const properties = { items: ['a'] };
    const built = buildEvent({ type: 'track', event: 'Viewed', properties }, envelope());
    properties.items.push('b');
    expect(built.ok && built.event).toMatchObject({ properties: { items: ['a'] } });
  });

  it('leaves userId out for anonymous visitors and sets it once known', () => {
    const anonymous = buildEvent({ type: 'track', event: 'X' }, envelope());
    expect(anonymous.ok && 'userId' in anonymous.event).toBe(false);
    const known = buildEvent({ type: 'track', event: 'X' }, { ...envelope(), userId: 'u' });
    expect(known.ok && known.event.userId).toBe('u');
  });

  it.each([
    [{ type: 'track', event: '' }, 'track: event must be a non-empty string'],
    [{ type: 'track', event: 'x'.repeat(201) }, 'track: event must have at most 200 characters'],
    [{ type: 'track', event: 'X', properties: [1] }, 'track: properties must be an object'],
    [{ type: 'identify', userId: null }, 'identify: userId must be a non-empty string'],
    [{ type: 'group', groupId: {} }, 'group: groupId must be a non-empty string'],
    [
      { type: 'alias', userId: 'u', previousId: 'p'.repeat(201) },
      'alias: previousId must have at most 200 characters',
    ],
    [{ type: 'page', name: 5 }, 'page: name must be a non-empty string'],
  ] as [Call, string][])('refuses a misused call: %j', (call, error) => {
    expect(buildEvent(call, envelope())).toEqual({ ok: false, error });
  });

  it('refuses an event over the size limit and one that cannot be serialized', () => {
    const big = buildEvent(
      { type: 'track', event: 'Big', properties: { blob: 'é'.repeat(16_000) } },
      envelope(),
    );
    expect(big).toEqual({
      ok: false,
      error: expect.stringMatching(/^the track event is \d+ bytes; at most 32256/),
    });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(buildEvent({ type: 'track', event: 'X', properties: cyclic }, envelope())).toEqual({
      ok: false,
      error: expect.stringContaining('cannot be serialized as JSON'),
    });
  });
});
