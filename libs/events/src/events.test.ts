import {
  consentAllows,
  correctedTimestamp,
  eventLimits,
  normalizeEvent,
  outboxKey,
  parseOutboxEnvelope,
  toOutboxEnvelopes,
  validateEvent,
  warehouseTables,
} from './index';

const base = { messageId: 'm-1', timestamp: '2026-03-01T10:00:00.000Z', anonymousId: 'anon-1' };
const messages = (input: unknown) => {
  const result = validateEvent(input);
  return result.valid ? [] : result.errors.map((e) => e.message);
};

const notATime = (path: string) =>
  `${path} must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z), on a date that exists, in the years 0001-9999`;

describe('validateEvent', () => {
  it.each([
    [{ ...base, type: 'track', event: 'Order Completed' }],
    [{ ...base, type: 'page' }],
    [{ ...base, type: 'identify', userId: 'u1', traits: { plan: 'pro' } }],
    [{ ...base, type: 'group', groupId: 'g1' }],
    [{ ...base, type: 'alias', userId: 'u1', previousId: 'anon-1' }],
    [
      {
        ...base,
        type: 'track',
        event: 'x',
        userId: null,
        extraTopLevel: true,
        context: { custom: { a: 1 }, consent: { analytics: true } },
      },
    ],
  ])('accepts %j', (event) => {
    expect(messages(event)).toEqual([]);
  });

  it.each([
    [{ ...base, type: 'track' }, 'event is required'],
    [{ ...base, type: 'identify' }, 'userId is required'],
    [{ ...base, type: 'identify', userId: null }, 'userId must be string'],
    [{ ...base, type: 'group' }, 'groupId is required'],
    [{ ...base, type: 'alias', userId: 'u' }, 'previousId is required'],
    [{ type: 'page', timestamp: base.timestamp, anonymousId: 'a' }, 'messageId is required'],
    [{ ...base, type: 'page', anonymousId: undefined }, 'anonymousId is required'],
    [{ ...base, type: 'page', timestamp: 'yesterday' }, notATime('timestamp')],
    [{ ...base, type: 'page', timestamp: '2026-03-01T10:00:00' }, notATime('timestamp')],
    [{ ...base, type: 'screen' }, 'type must be one of track, identify, page, group, alias'],
    [{ ...base }, 'type must be one of track, identify, page, group, alias'],
    [{ ...base, type: 'track', event: '' }, 'event must not be empty'],
    [{ ...base, type: 'track', event: 'e'.repeat(201) }, 'event must have at most 200 characters'],
    [{ ...base, type: 'page', messageId: 'm'.repeat(101) }, 'messageId must have at most 100 characters'],
    [{ ...base, type: 'track', event: 'e', properties: [1, 2] }, 'properties must be object'],
    [
      { ...base, type: 'page', context: { screen: { width: 'wide' } } },
      'context.screen.width must be integer',
    ],
    [
      { ...base, type: 'page', context: { consent: { analytics: 'yes' } } },
      'context.consent.analytics must be boolean',
    ],
    ['a string', 'event must be an object'],
    [null, 'event must be an object'],
  ])('rejects %j with exactly "%s"', (event, expected) => {
    // The whole list: an error of another event type, or a wrong path, must not pass.
    expect(messages(event)).toEqual([expected]);
  });

  it('rejects an event over the size limit, naming both sizes', () => {
    const big = {
      ...base,
      type: 'track',
      event: 'e',
      properties: { blob: 'x'.repeat(eventLimits.maxEventBytes) },
    };
    expect(messages(big)[0]).toMatch(/^event is \d+ bytes; at most 32768 are accepted$/);
    // Measured whenever the body it came from could hold an event over the limit.
    const source = Buffer.byteLength(JSON.stringify({ batch: [big] }));
    expect(validateEvent(big, source)).toMatchObject({ valid: false });
    expect(validateEvent(big, eventLimits.maxEventBytes / 2 + 1)).toMatchObject({ valid: false });
  });

  it('reports all problems of an event at once', () => {
    expect(messages({ type: 'alias', timestamp: 'x' }).length).toBeGreaterThanOrEqual(4);
  });
});

describe('normalizeEvent', () => {
  const receipt = {
    receivedAt: new Date('2026-03-01T12:00:00.000Z'),
    ip: '203.0.113.9',
    userAgent: 'Mozilla/5.0 (server)',
  };
  const context = {
    source: 'web',
    library: { name: 'pipeline-web-tracking', version: '1.2.3' },
    session: { id: 's-9' },
    page: { url: 'https://shop.example/p?q=1', path: '/p', title: 'P', referrer: 'https://google.com' },
    screen: { width: 1440, height: 900 },
    campaign: {
      utm_source: 'newsletter',
      utm_medium: 'email',
      utm_campaign: 'spring',
      utm_term: 't',
      utm_content: 'c',
    },
    clickId: { gclid: 'g-1' },
    consent: { analytics: true, marketing: false },
    browser: 'Firefox',
    os: 'Linux',
    device: 'desktop',
    language: 'de',
    locale: 'de-DE',
    userAgent: 'Mozilla/5.0 (client)',
    custom: { experiment: 'b' },
  };

  it('routes each type to its table', () => {
    const route = (event: object) => {
      const result = validateEvent(event);
      if (!result.valid) throw new Error(JSON.stringify(result.errors));
      return normalizeEvent(result.event, receipt).table;
    };
    expect(route({ ...base, type: 'track', event: 'e' })).toBe('events');
    expect(route({ ...base, type: 'page' })).toBe('events');
    expect(route({ ...base, type: 'identify', userId: 'u' })).toBe('users');
    expect(route({ ...base, type: 'group', groupId: 'g' })).toBe('groups');
    expect(route({ ...base, type: 'alias', userId: 'u', previousId: 'p' })).toBe('aliases');
  });

  it('maps the context onto typed columns, with the server’s IP and user agent, and keeps unknown keys', () => {
    const result = validateEvent({
      ...base,
      type: 'track',
      event: 'Viewed',
      userId: 'u1',
      properties: { sku: 'A' },
      context,
    });
    if (!result.valid) throw new Error('invalid');
    const { table, row } = normalizeEvent(result.event, receipt);
    expect(table).toBe('events');
    expect(row).toEqual({
      message_id: 'm-1',
      type: 'track',
      event: 'Viewed',
      name: null,
      anonymous_id: 'anon-1',
      user_id: 'u1',
      session_id: 's-9',
      timestamp: '2026-03-01T10:00:00.000Z',
      original_timestamp: '2026-03-01T10:00:00.000Z',
      sent_at: null,
      received_at: '2026-03-01T12:00:00.000Z',
      properties: { sku: 'A' },
      context_source: 'web',
      context_library_name: 'pipeline-web-tracking',
      context_library_version: '1.2.3',
      context_page_url: 'https://shop.example/p?q=1',
      context_page_path: '/p',
      context_page_title: 'P',
      context_page_referrer: 'https://google.com',
      context_screen_width: 1440,
      context_screen_height: 900,
      context_campaign_source: 'newsletter',
      context_campaign_medium: 'email',
      context_campaign_name: 'spring',
      context_campaign_term: 't',
      context_campaign_content: 'c',
      context_click_ids: { gclid: 'g-1' },
      context_consent: { analytics: true, marketing: false },
      context_browser: 'Firefox',
      context_os: 'Linux',
      context_device: 'desktop',
      context_language: 'de',
      context_locale: 'de-DE',
      context_user_agent: 'Mozilla/5.0 (server)',
      context_ip: '203.0.113.9',
      context_extra: { custom: { experiment: 'b' } },
      plan_violations: null,
    });
    expect(Object.keys(row).sort()).toEqual(Object.keys(warehouseTables.events).sort());
  });

  it('gives every table exactly its declared columns', () => {
    const cases = [
      { ...base, type: 'identify', userId: 'u', traits: { a: 1 } },
      { ...base, type: 'group', groupId: 'g' },
      { ...base, type: 'alias', userId: 'u', previousId: 'p' },
    ];
    for (const event of cases) {
      const result = validateEvent(event);
      if (!result.valid) throw new Error('invalid');
      const { table, row } = normalizeEvent(result.event, { ...receipt, ip: null, userAgent: null });
      expect(Object.keys(row).sort()).toEqual(Object.keys(warehouseTables[table]).sort());
    }
  });

  it('corrects the client clock with sentAt: receivedAt - (sentAt - timestamp)', () => {
    // The client clock is 1 hour behind; the event happened 5 s before sending.
    const result = validateEvent({
      ...base,
      type: 'page',
      timestamp: '2026-03-01T10:59:55.000Z',
      sentAt: '2026-03-01T11:00:00.000Z',
    });
    if (!result.valid) throw new Error('invalid');
    const { row } = normalizeEvent(result.event, receipt);
    expect(row.timestamp).toBe('2026-03-01T11:59:55.000Z');
    expect(row.original_timestamp).toBe('2026-03-01T10:59:55.000Z');
    expect(row.sent_at).toBe('2026-03-01T11:00:00.000Z');
  });

  it('uses the batch sentAt when the event has none', () => {
    expect(
      correctedTimestamp(
        '2026-03-01T10:00:00.000Z',
        '2026-03-01T10:00:10.000Z',
        new Date('2026-03-01T12:00:00.000Z'),
      ).toISOString(),
    ).toBe('2026-03-01T11:59:50.000Z');
    expect(correctedTimestamp('2026-03-01T10:00:00.000Z', undefined, new Date()).toISOString()).toBe(
      '2026-03-01T10:00:00.000Z',
    );
  });
});

describe('consentAllows', () => {
  it('gates destinations by their consent group; only an explicit false withholds', () => {
    expect(consentAllows('product_analytics', { analytics: false })).toBe(false);
    expect(consentAllows('product_analytics', { marketing: false })).toBe(true);
    expect(consentAllows('messaging', { marketing: false })).toBe(false);
    expect(consentAllows('advertising', undefined)).toBe(true);
    expect(consentAllows('warehouse', { analytics: false, marketing: false })).toBe(true);
    expect(consentAllows('webhook', { marketing: false })).toBe(true);
    expect(consentAllows('push', { marketing: false, analytics: true })).toBe(false);
    expect(consentAllows('customer_data', { analytics: false })).toBe(false);
  });

  it('withholds events from a category this build does not know', () => {
    expect(consentAllows('telepathy' as 'webhook', undefined)).toBe(false);
    expect(consentAllows('toString' as 'webhook', {})).toBe(false);
  });
});

describe('toOutboxEnvelopes', () => {
  const base = {
    v: 2 as const,
    accountId: 'a',
    writeKeyId: 'w',
    batchId: 'b',
    receivedAt: '2026-03-01T12:00:00.000Z',
    ip: null,
    userAgent: null,
  };
  const ev = (i: number, pad = 0) => ({
    type: 'track' as const,
    event: 'e',
    messageId: `m${i}`,
    timestamp: base.receivedAt,
    anonymousId: 'anon',
    properties: { pad: 'x'.repeat(pad) },
  });

  it('keeps a request in one record when it fits, keyed by account and visitor', () => {
    const out = toOutboxEnvelopes(base, [ev(1), ev(2)]);
    expect(out).toHaveLength(1);
    expect(parseOutboxEnvelope(Buffer.from(out[0]!.json))?.events.map((e) => e.messageId)).toEqual([
      'm1',
      'm2',
    ]);
    expect(outboxKey(out[0]!.envelope)).toBe('a:anon');
  });

  it('skips measuring events when the body they came from fits half a record, with the same result', () => {
    const events = [ev(1), ev(2, 100)];
    const small = toOutboxEnvelopes(base, events, 10_000);
    expect(small).toEqual(toOutboxEnvelopes(base, events));
    const large = Array.from({ length: 60 }, (_, i) => ev(i, 30_000));
    expect(toOutboxEnvelopes(base, large, 60 * 30_100).length).toBeGreaterThan(3);
  });

  it('splits large requests so no record exceeds 512 KB, in order', () => {
    const events = Array.from({ length: 60 }, (_, i) => ev(i, 30_000));
    const out = toOutboxEnvelopes(base, events);
    expect(out.length).toBeGreaterThan(3);
    for (const { json } of out) expect(Buffer.byteLength(json)).toBeLessThanOrEqual(512 * 1024);
    expect(out.flatMap((o) => o.envelope.events.map((e) => e.messageId))).toEqual(
      events.map((e) => e.messageId),
    );
  });

  it('rejects records of another version or shape', () => {
    expect(parseOutboxEnvelope(Buffer.from('{"v":1,"accountId":"a","event":{}}'))).toBeNull();
    expect(parseOutboxEnvelope(Buffer.from('nope'))).toBeNull();
    expect(parseOutboxEnvelope(null)).toBeNull();
  });
});
