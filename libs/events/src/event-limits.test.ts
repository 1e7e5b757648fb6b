import { maxEventDepth } from './event-content';
import { eventLimits } from './event-schema';
import { validateEvent, type EventDialect } from './event-validator';

// Every documented limit (docs/tracking-api.md#events) at its exact value, which is
// accepted, and one past it, which is refused with exactly one message naming the field.

const base = { messageId: 'm-1', timestamp: '2026-03-01T10:00:00.000Z', anonymousId: 'anon-1' };
const track = { ...base, type: 'track', event: 'Clicked' };

function outcome(event: object, dialect: EventDialect = 'collect'): string[] | 'valid' {
  const result = validateEvent(event, Infinity, dialect);
  return result.valid ? 'valid' : result.errors.map((e) => e.message);
}

/** `value` at `path` (dotted) of a copy of `event`. */
function withValue(event: object, path: string, value: unknown): object {
  const copy = structuredClone(event) as Record<string, unknown>;
  const keys = path.split('.');
  let node = copy;
  for (const key of keys.slice(0, -1)) {
    node[key] = (node[key] as Record<string, unknown> | undefined) ?? {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
  return copy;
}

describe('length limits, at the limit and one past it', () => {
  const cases: [what: string, event: object, path: string, limit: number, dialect: EventDialect][] = [
    ['messageId', track, 'messageId', eventLimits.maxMessageIdLength, 'collect'],
    ['a track event name', track, 'event', eventLimits.maxEventNameLength, 'collect'],
    ['a page name', { ...base, type: 'page' }, 'name', eventLimits.maxEventNameLength, 'collect'],
    ['a screen name', { ...base, type: 'screen' }, 'name', eventLimits.maxEventNameLength, 'segment'],
    ['anonymousId', track, 'anonymousId', eventLimits.maxIdLength, 'collect'],
    ['userId of a track', track, 'userId', eventLimits.maxIdLength, 'collect'],
    ['sessionId', track, 'sessionId', eventLimits.maxIdLength, 'collect'],
    [
      'userId of an identify',
      { ...base, type: 'identify', userId: 'u' },
      'userId',
      eventLimits.maxIdLength,
      'collect',
    ],
    ['groupId', { ...base, type: 'group', groupId: 'g' }, 'groupId', eventLimits.maxIdLength, 'collect'],
    [
      'previousId',
      { ...base, type: 'alias', userId: 'u', previousId: 'p' },
      'previousId',
      eventLimits.maxIdLength,
      'collect',
    ],
    [
      'userId of an alias',
      { ...base, type: 'alias', userId: 'u', previousId: 'p' },
      'userId',
      200,
      'collect',
    ],
    ['writeKey', track, 'writeKey', 200, 'collect'],
    ...[
      'source',
      'library.name',
      'library.version',
      'session.id',
      'page.url',
      'page.path',
      'page.title',
      'page.referrer',
      'campaign.utm_source',
      'campaign.name',
      'clickId.gclid',
      'browser',
      'os',
      'device',
      'language',
      'locale',
      'userAgent',
    ].map((key): [string, object, string, number, EventDialect] => [
      `context.${key}`,
      track,
      `context.${key}`,
      eventLimits.maxContextText,
      'collect',
    ]),
  ];

  it.each(cases)('%s: accepted at the limit, refused one past it', (_what, event, path, limit, dialect) => {
    expect(outcome(withValue(event, path, 'x'.repeat(limit)), dialect)).toBe('valid');
    expect(outcome(withValue(event, path, 'x'.repeat(limit + 1)), dialect)).toEqual([
      `${path} must have at most ${limit} characters`,
    ]);
  });

  it('the documented values', () => {
    expect(eventLimits).toMatchObject({
      maxEventBytes: 32_768,
      maxMessageIdLength: 100,
      maxEventNameLength: 200,
      maxIdLength: 200,
      maxBatchSize: 100,
      maxContextText: 2048,
    });
  });

  it.each([
    ['anonymousId', track],
    ['event', track],
    ['groupId', { ...base, type: 'group', groupId: 'g' }],
    ['previousId', { ...base, type: 'alias', userId: 'u', previousId: 'p' }],
    ['sessionId', track],
  ])('%s: one character is enough, none is refused', (path, event) => {
    expect(outcome(withValue(event, path, 'x'))).toBe('valid');
    expect(outcome(withValue(event, path, ''))).toEqual([`${path} must not be empty`]);
  });
});

describe('a nullable id (userId of a track) refused for what is wrong with it, once', () => {
  it.each([
    ['x'.repeat(201), 'userId must have at most 200 characters'],
    ['', 'userId must not be empty'],
    [5, 'userId must be string or null'],
  ])('%j: %s', (userId, message) => {
    expect(outcome({ ...track, userId })).toEqual([message]);
  });
});

describe('the event size limit, in UTF-8 bytes of the serialized event', () => {
  /** A track event of exactly `bytes` bytes serialized, padded with `unit` (1 or more bytes each). */
  function eventOf(bytes: number, unit = 'x'): object {
    const empty = { ...track, properties: { pad: '' } };
    const room = bytes - Buffer.byteLength(JSON.stringify(empty), 'utf8');
    const unitBytes = Buffer.byteLength(unit, 'utf8');
    const pad = unit.repeat(Math.floor(room / unitBytes)) + 'x'.repeat(room % unitBytes);
    const event = { ...track, properties: { pad } };
    expect(Buffer.byteLength(JSON.stringify(event), 'utf8')).toBe(bytes);
    return event;
  }

  it.each([
    ['ASCII', 'x'],
    ['multi-byte text (counted in bytes, not characters)', 'é'],
    ['four-byte characters', '😀'],
  ])('%s: 32,768 bytes are accepted, 32,769 refused naming both sizes', (_what, unit) => {
    expect(outcome(eventOf(eventLimits.maxEventBytes, unit))).toBe('valid');
    expect(outcome(eventOf(eventLimits.maxEventBytes + 1, unit))).toEqual([
      'event is 32769 bytes; at most 32768 are accepted',
    ]);
  });

  it('is measured when the body it came from is over half the limit, and only then skipped', () => {
    const over = eventOf(eventLimits.maxEventBytes + 1);
    expect(validateEvent(over, eventLimits.maxEventBytes / 2 + 1)).toEqual({
      valid: false,
      errors: [{ message: 'event is 32769 bytes; at most 32768 are accepted' }],
    });
  });
});

describe('context.screen sizes: the warehouse columns are 32-bit integers', () => {
  it.each(['width', 'height'])('%s: 0 and 2,147,483,647 accepted; -1 and 2,147,483,648 refused', (side) => {
    const path = `context.screen.${side}`;
    expect(outcome(withValue(track, path, 0))).toBe('valid');
    expect(outcome(withValue(track, path, eventLimits.maxScreenPixels))).toBe('valid');
    expect(outcome(withValue(track, path, eventLimits.maxScreenPixels + 1))).toEqual([
      `${path} must be <= 2147483647`,
    ]);
    expect(outcome(withValue(track, path, -1))).toEqual([`${path} must be >= 0`]);
  });
});

describe('nesting depth', () => {
  /** properties holding `levels` objects inside each other. */
  const nested = (levels: number) => {
    let value: Record<string, unknown> = {};
    for (let i = 1; i < levels; i += 1) value = { a: value };
    return { ...track, properties: value };
  };

  it(`accepts an object ${maxEventDepth} levels below the event and refuses one more, naming its path`, () => {
    expect(outcome(nested(maxEventDepth))).toBe('valid');
    expect(outcome(nested(maxEventDepth + 1))).toEqual([
      `properties${'.a'.repeat(maxEventDepth)} is nested more than ${maxEventDepth} levels deep`,
    ]);
  });
});
