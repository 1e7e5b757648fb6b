import fc from 'fast-check';
import { checkEventContent, maxEventDepth, storableText } from './event-content';
import { validateEvent } from './event-validator';

const nested = (depth: number): unknown => {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i += 1) value = { a: value };
  return value;
};

describe('storableText', () => {
  it.each([
    ['a\u0000b', 'a\uFFFDb'],
    ['\u0000\u0000', '\uFFFD\uFFFD'],
    ['x\uD800', 'x\uFFFD'],
    ['\uDC00x', '\uFFFDx'],
    ['\uDC00\uD800', '\uFFFD\uFFFD'],
    ['\uD83D\uDE00', '\uD83D\uDE00'],
    ['\uD83D\uD83D\uDE00', '\uFFFD\uD83D\uDE00'],
    ['plain', 'plain'],
  ])('%j becomes %j', (text, expected) => {
    expect(storableText(text)).toBe(expected);
  });

  it('leaves no NUL and no unpaired surrogate, changes nothing else, and keeps the length', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 64 }), (text) => {
        const clean = storableText(text);
        expect(clean.includes('\u0000')).toBe(false);
        expect(clean.isWellFormed()).toBe(true);
        expect(clean.length).toBe(text.length);
        if (text.isWellFormed() && !text.includes('\u0000')) expect(clean).toBe(text);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('checkEventContent', () => {
  it('returns the same value when nothing needs repair', () => {
    const event = { type: 'track', properties: { a: [1, 'b', { c: null }] } };
    const result = checkEventContent(event);
    expect(result).toEqual({ ok: true, value: event });
    expect(result.ok && result.value).toBe(event);
  });

  it('repairs keys and values at any depth in a copy, leaving the input alone', () => {
    const input = JSON.parse(
      '{"event":"a\\u0000b","properties":{"k\\u0000":["\\ud800",{"__proto__":"\\udc00x"}],"same":1}}',
    ) as Record<string, unknown>;
    const before = JSON.stringify(input);
    const result = checkEventContent(input);
    expect(JSON.stringify(input)).toBe(before);
    expect(result.ok).toBe(true);
    const value = (result.ok ? result.value : undefined) as Record<string, unknown>;
    expect(value.event).toBe('a\uFFFDb');
    const properties = value.properties as Record<string, unknown>;
    expect(Object.keys(properties)).toEqual(['k\uFFFD', 'same']);
    const list = properties['k\uFFFD'] as [string, Record<string, unknown>];
    expect(list[0]).toBe('\uFFFD');
    // "__proto__" stays an own key with its value, not a prototype.
    expect(Object.getOwnPropertyNames(list[1])).toEqual(['__proto__']);
    expect(list[1]['__proto__']).toBe('\uFFFDx');
    expect(Object.getPrototypeOf(list[1])).toBe(Object.prototype);
  });

  it(`accepts an object ${maxEventDepth} levels below the event and refuses one a level deeper, naming its path`, () => {
    // nested(n): the event and n - 1 objects inside it, the deepest n - 1 levels below.
    expect(checkEventContent(nested(maxEventDepth + 1)).ok).toBe(true);
    const deep = checkEventContent(nested(maxEventDepth + 2));
    expect(deep).toEqual({ ok: false, path: Array.from({ length: maxEventDepth + 1 }, () => 'a').join('.') });
    // Arrays count too.
    let list: unknown = 1;
    for (let i = 0; i < maxEventDepth + 1; i += 1) list = [list];
    expect(checkEventContent(list).ok).toBe(true);
    expect(checkEventContent([list])).toEqual({ ok: false, path: '[0]'.repeat(maxEventDepth + 1) });
  });

  it('the validator refuses an event nested too deep instead of failing to measure it', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 20_000; i += 1) deep = [deep];
    const event = {
      type: 'track',
      event: 'x',
      messageId: 'm',
      anonymousId: 'a',
      timestamp: '2026-01-01T00:00:00Z',
      properties: { deep },
    };
    const result = validateEvent(event, 40_000);
    expect(result).toEqual({
      valid: false,
      errors: [
        {
          message: `properties.deep${'[0]'.repeat(maxEventDepth - 1)} is nested more than ${maxEventDepth} levels deep`,
        },
      ],
    });
  });

  it('the validator returns the repaired event: a NUL in the name is U+FFFD, not an error', () => {
    const result = validateEvent({
      type: 'track',
      event: 'sign\u0000up',
      messageId: 'm',
      anonymousId: 'a\uD800',
      timestamp: '2026-01-01T00:00:00Z',
    });
    expect(result).toEqual({
      valid: true,
      event: {
        type: 'track',
        event: 'sign\uFFFDup',
        messageId: 'm',
        anonymousId: 'a\uFFFD',
        timestamp: '2026-01-01T00:00:00Z',
      },
    });
  });
});
