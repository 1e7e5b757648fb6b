import {
  correctedTimestamp,
  normalizeEvent,
  UnstorableEvent,
  validateEvent,
  type ReceiptContext,
  type WarehouseRow,
} from './index';

// Rows of every type, value by value, from validation through normalization: each assertion
// here kills a mutant of the normalizer or the schema that column-name checks let through.

const receipt: ReceiptContext = {
  receivedAt: new Date('2026-03-01T12:00:00.000Z'),
  ip: null,
  userAgent: null,
};
const base = { messageId: 'm-1', timestamp: '2026-03-01T10:00:00.000Z', anonymousId: 'anon-1' };

const nullContext = {
  context_source: null,
  context_library_name: null,
  context_library_version: null,
  context_page_url: null,
  context_page_path: null,
  context_page_title: null,
  context_page_referrer: null,
  context_screen_width: null,
  context_screen_height: null,
  context_campaign_source: null,
  context_campaign_medium: null,
  context_campaign_name: null,
  context_campaign_term: null,
  context_campaign_content: null,
  context_click_ids: null,
  context_consent: null,
  context_browser: null,
  context_os: null,
  context_device: null,
  context_language: null,
  context_locale: null,
  context_user_agent: null,
  context_ip: null,
  context_extra: null,
  plan_violations: null,
};
const who = {
  message_id: 'm-1',
  anonymous_id: 'anon-1',
  user_id: null,
  session_id: null,
  timestamp: '2026-03-01T10:00:00.000Z',
  original_timestamp: '2026-03-01T10:00:00.000Z',
  sent_at: null,
  received_at: '2026-03-01T12:00:00.000Z',
};

function rowOf(event: object, dialect: 'collect' | 'segment' = 'collect'): WarehouseRow {
  const result = validateEvent(event, Infinity, dialect);
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, receipt);
}

function errorsOf(event: object): string[] {
  const result = validateEvent(event);
  return result.valid ? [] : result.errors.map((e) => e.message);
}

describe('rows of each event type', () => {
  it('stores a page with its type, name and properties', () => {
    expect(rowOf({ ...base, type: 'page', name: 'Pricing', properties: { plan: 'pro' } })).toEqual({
      table: 'events',
      row: {
        ...who,
        ...nullContext,
        type: 'page',
        event: null,
        name: 'Pricing',
        properties: { plan: 'pro' },
      },
    });
  });

  it('stores a page without properties as an empty object and without a name as NULL', () => {
    expect(rowOf({ ...base, type: 'page' })).toEqual({
      table: 'events',
      row: { ...who, ...nullContext, type: 'page', event: null, name: null, properties: {} },
    });
  });

  it('stores a screen like a page, with its own type', () => {
    expect(rowOf({ ...base, type: 'screen', name: 'Home', properties: { tab: 2 } }, 'segment')).toEqual({
      table: 'events',
      row: { ...who, ...nullContext, type: 'screen', event: null, name: 'Home', properties: { tab: 2 } },
    });
  });

  it('stores a track without properties as an empty object', () => {
    expect(rowOf({ ...base, type: 'track', event: 'Signed Up' })).toEqual({
      table: 'events',
      row: { ...who, ...nullContext, type: 'track', event: 'Signed Up', name: null, properties: {} },
    });
  });

  it('stores identify traits, and no traits as an empty object', () => {
    expect(rowOf({ ...base, type: 'identify', userId: 'u-1', traits: { email: 'a@example.com' } })).toEqual({
      table: 'users',
      row: { ...who, ...nullContext, user_id: 'u-1', traits: { email: 'a@example.com' } },
    });
    expect(rowOf({ ...base, type: 'identify', userId: 'u-1' })).toEqual({
      table: 'users',
      row: { ...who, ...nullContext, user_id: 'u-1', traits: {} },
    });
  });

  it('stores group traits and the group id, and no traits as an empty object', () => {
    expect(rowOf({ ...base, type: 'group', groupId: 'g-1', traits: { seats: 5 } })).toEqual({
      table: 'groups',
      row: { ...who, ...nullContext, group_id: 'g-1', traits: { seats: 5 } },
    });
    expect(rowOf({ ...base, type: 'group', groupId: 'g-1' })).toEqual({
      table: 'groups',
      row: { ...who, ...nullContext, group_id: 'g-1', traits: {} },
    });
  });

  it('stores an alias with both ids', () => {
    expect(rowOf({ ...base, type: 'alias', userId: 'u-2', previousId: 'anon-1' })).toEqual({
      table: 'aliases',
      row: { ...who, ...nullContext, user_id: 'u-2', previous_id: 'anon-1' },
    });
  });
});

describe('session and context columns', () => {
  it('takes an event with a context but no session, leaving session_id NULL', () => {
    expect(rowOf({ ...base, type: 'track', event: 'e', context: { locale: 'fr-FR' } }).row).toMatchObject({
      session_id: null,
      context_locale: 'fr-FR',
    });
  });

  it('takes the session from the context, and prefers the top-level sessionId', () => {
    const context = { session: { id: 's-ctx' } };
    expect(rowOf({ ...base, type: 'track', event: 'e', context }).row.session_id).toBe('s-ctx');
    expect(rowOf({ ...base, type: 'track', event: 'e', sessionId: 's-top', context }).row.session_id).toBe(
      's-top',
    );
  });

  it('stores empty click ids, consent and unknown context keys as NULL, not {}', () => {
    const { row } = rowOf({
      ...base,
      type: 'track',
      event: 'e',
      context: { clickId: {}, consent: {}, custom: {} },
    });
    expect(row.context_click_ids).toBeNull();
    expect(row.context_consent).toBeNull();
    // `custom` itself is a key, so the extra object is { custom: {} }: one key, kept.
    expect(row.context_extra).toEqual({ custom: {} });
    const typedOnly = rowOf({ ...base, type: 'track', event: 'e', context: { clickId: {}, consent: {} } });
    expect(typedOnly.row.context_extra).toBeNull();
  });
});

describe('id length limits', () => {
  const ok = 'i'.repeat(200);
  const long = 'i'.repeat(201);

  it.each([
    ['anonymousId', { ...base, type: 'track', event: 'e' }],
    ['sessionId', { ...base, type: 'track', event: 'e' }],
    ['userId', { ...base, type: 'identify' }],
    ['groupId', { ...base, type: 'group' }],
    ['previousId', { ...base, type: 'alias', userId: 'u' }],
    ['userId', { ...base, type: 'alias', previousId: 'p' }],
  ])('takes a %s of 200 characters and refuses 201 (%j)', (field, event) => {
    expect(errorsOf({ ...event, [field]: ok })).toEqual([]);
    expect(errorsOf({ ...event, [field]: long })).toEqual([`${field} must have at most 200 characters`]);
  });

  it('takes a nullable userId of 200 characters and refuses 201', () => {
    const event = { ...base, type: 'track', event: 'e' };
    expect(errorsOf({ ...event, userId: ok })).toEqual([]);
    // The union with null adds ajv's own lines for the other branch; the limit is named first.
    expect(errorsOf({ ...event, userId: long })[0]).toBe('userId must have at most 200 characters');
  });
});

describe('context columns from non-utm campaign keys, client user agent and empty text', () => {
  it('reads campaign keys without the utm_ prefix, and the client user agent when the server saw none', () => {
    const { row } = rowOf({
      ...base,
      type: 'track',
      event: 'e',
      context: {
        campaign: { source: 's', medium: 'm', name: 'n', term: 't', content: 'c' },
        userAgent: 'client UA',
        browser: '',
      },
    });
    expect(row).toMatchObject({
      context_campaign_source: 's',
      context_campaign_medium: 'm',
      context_campaign_name: 'n',
      context_campaign_term: 't',
      context_campaign_content: 'c',
      context_user_agent: 'client UA',
      context_browser: null,
    });
  });
});

describe('clock correction and receipt times', () => {
  it('uses the batch sentAt of the receipt, and stores it', () => {
    const result = validateEvent({ ...base, type: 'track', event: 'e' });
    if (!result.valid) throw new Error('invalid');
    const { row } = normalizeEvent(result.event, { ...receipt, batchSentAt: '2026-03-01T10:00:30.000Z' });
    expect(row.timestamp).toBe('2026-03-01T11:59:30.000Z');
    expect(row.sent_at).toBe('2026-03-01T10:00:30.000Z');
  });

  it('keeps the original time when sentAt does not parse or the correction leaves the years 0001-9999', () => {
    const receivedAt = new Date('2026-03-01T12:00:00.000Z');
    expect(correctedTimestamp('2026-03-01T10:00:00.000Z', 'later', receivedAt).toISOString()).toBe(
      '2026-03-01T10:00:00.000Z',
    );
    expect(
      correctedTimestamp('0001-01-01T00:00:00.000Z', '9999-01-01T00:00:00.000Z', receivedAt).toISOString(),
    ).toBe('0001-01-01T00:00:00.000Z');
  });

  it('refuses a receipt time outside the years 0001-9999 and a timestamp that never came through the door', () => {
    const result = validateEvent({ ...base, type: 'track', event: 'e' });
    if (!result.valid) throw new Error('invalid');
    expect(() =>
      normalizeEvent(result.event, { ...receipt, receivedAt: new Date(Date.UTC(10000, 0, 1)) }),
    ).toThrow(new UnstorableEvent('receivedAt is not an accepted date-time'));
    expect(() => normalizeEvent({ ...result.event, timestamp: 'noon' }, receipt)).toThrow(
      new UnstorableEvent('timestamp is not an accepted date-time: noon'),
    );
    expect(() => normalizeEvent({ ...result.event, sentAt: 'noon' }, receipt)).toThrow(UnstorableEvent);
  });
});

describe('validation messages', () => {
  it('names who is missing in the words of each dialect', () => {
    const anonymous = { messageId: 'm', timestamp: base.timestamp, type: 'track', event: 'e' };
    expect(validateEvent(anonymous)).toEqual({
      valid: false,
      errors: [{ message: 'anonymousId is required' }],
    });
    expect(validateEvent(anonymous, Infinity, 'segment')).toEqual({
      valid: false,
      errors: [{ message: 'userId or anonymousId is required' }],
    });
    expect(validateEvent({ ...anonymous, userId: 'u' }, Infinity, 'segment')).toMatchObject({ valid: true });
    expect(validateEvent({ ...anonymous, userId: 'u' })).toEqual({
      valid: false,
      errors: [{ message: 'anonymousId is required' }],
    });
    expect(
      validateEvent({ messageId: 'm', timestamp: base.timestamp, type: 'identify', userId: 'u' }),
    ).toEqual({
      valid: false,
      errors: [{ message: 'anonymousId is required' }],
    });
  });

  it('names the path of a nested problem, and only the problems of the event’s own type', () => {
    expect(errorsOf({ ...base, type: 'page', context: { screen: { width: 1.5 } } })).toEqual([
      'context.screen.width must be integer',
    ]);
    expect(errorsOf({ ...base, type: 'track', event: '' })).toEqual(['event must not be empty']);
    expect(errorsOf({ ...base, type: 'alias', userId: 'u' })).toEqual(['previousId is required']);
    expect(errorsOf({ ...base, type: 'screen' })).toEqual([
      'type must be one of track, identify, page, group, alias',
    ]);
    expect(validateEvent({ ...base, type: 'screen' }, Infinity, 'segment')).toMatchObject({ valid: true });
  });
});
