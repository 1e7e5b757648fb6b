import fc from 'fast-check';
import { hasEscapedKey, parseJsonText, parseWithoutKeyCache } from './json-text';

/** Whether JSON.parse refuses `text`: its verdict on syntax is not touched by the key bug. */
const refusedNatively = (text: string) => {
  try {
    JSON.parse(text);
    return false;
  } catch {
    return true;
  }
};

/**
 * hasEscapedKey's answer for `text`, and how many characters of `text` its indexOf calls read:
 * each call reads from where it starts to what it finds, or to the end.
 */
const scanOf = (text: string) => {
  const indexOf = String.prototype.indexOf;
  let reads = 0;
  const spy = jest.spyOn(String.prototype, 'indexOf').mockImplementation(function (
    this: string,
    search: string,
    from?: number,
  ) {
    const found = indexOf.call(this, search, from);
    if (String(this) === text) reads += (found === -1 ? text.length : found + search.length) - (from ?? 0);
    return found;
  });
  try {
    const escapedKey = hasEscapedKey(text);
    return { escapedKey, reads };
  } finally {
    spy.mockRestore();
  }
};

describe('parseJsonText', () => {
  it('keeps an escaped key after a "\\\\" key of the same shape (V8 reads it as "\\\\")', () => {
    // Shrunk from the warehouse's generative test: in Node 24.21 JSON.parse of this text gives
    // the keys "" and "\\", the trait "\n" renamed.
    const text = '{"":[],"\\n":{},"":{"":{"":"","\\\\":false,"":""}}}';
    const parsed = parseJsonText(text) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(['', '\n']);
    expect(parsed['']).toEqual({ '': { '': '', '\\': false } });
    expect(parsed['\n']).toEqual({});
  });

  it('gives what JSON.parse gives for a text without an escaped key, by JSON.parse itself', () => {
    const parse = jest.spyOn(JSON, 'parse');
    try {
      expect(parseJsonText('{"a":[1,{"b":null}],"c":"d"}')).toEqual({ a: [1, { b: null }], c: 'd' });
      expect(parse).toHaveBeenCalledTimes(1);
      // Escapes in values only (security review 2026-11-29, finding 7: these took the scanner).
      expect(parseJsonText('{"a":"b\\"c","d":["\\\\",{"e":"\\n"}]}')).toEqual({
        a: 'b"c',
        d: ['\\', { e: '\n' }],
      });
      expect(parse).toHaveBeenCalledTimes(2);
      expect(parseJsonText('{"a\\nb":1}')).toEqual({ 'a\nb': 1 });
      expect(parse).toHaveBeenCalledTimes(2);
    } finally {
      parse.mockRestore();
    }
  });

  it.each([
    ['{"a":1}', false],
    ['{"a":"\\n"}', false],
    ['["\\"", "\\\\", "x\\u0041"]', false],
    ['{"a":"x\\":"}', false],
    ['{"a":"\\\\","b":1}', false],
    ['{"\\n":1}', true],
    ['{"a":{"\\\\":1}}', true],
    ['{"k\\"" \t\r\n : 1}', true],
    ['{"a":"\\n","b\\u0041":2}', true],
    ['"\\', false],
    ['\\', false],
  ])('tells whether %j has an escaped key: %s', (text, expected) => {
    expect(hasEscapedKey(text)).toBe(expected);
  });

  it.each<[string, boolean, unknown]>([
    // A string at the very start, its escape just after the opening quote: a value, not a key.
    ['"\\n"', false, '\n'],
    ['"\\n"  ', false, '\n'],
    [' "\\\\" ', false, '\\'],
    // An escaped quote is not a string's end: `\":` inside a value is no key.
    ['["\\":"]', false, ['":']],
    ['{"a":"\\":"}', false, { a: '":' }],
    ['{"\\":":1}', true, { '":': 1 }],
    // Escapes at a key's first and last character, the last one escaping a quote or a backslash.
    ['{"\\na":1}', true, { '\na': 1 }],
    ['{"a\\"":1}', true, { 'a"': 1 }],
    ['{"a\\\\":"\\\\"}', true, { 'a\\': '\\' }],
    // Empty strings beside escaped ones: the scan's quotes stay paired.
    ['{"":"\\n"}', false, { '': '\n' }],
    ['{"":"","a":"\\"\\""}', false, { '': '', a: '""' }],
    ['{"":"\\"","\\n":""}', true, { '': '"', '\n': '' }],
    // An escaped value, then a key that is a colon, or a colon in a later value.
    ['{"a":"\\\\",":":1}', false, { a: '\\', ':': 1 }],
    ['["\\\\",":"]', false, ['\\', ':']],
    ['{"a":"\\t","b":{"c\\t":[]}}', true, { a: '\t', b: { 'c\t': [] } }],
  ])('reads %j (escaped key: %s) by the parser that fits it', (text, escapedKey, value) => {
    expect(hasEscapedKey(text)).toBe(escapedKey);
    const parse = jest.spyOn(JSON, 'parse');
    try {
      expect(parseJsonText(text)).toEqual(value);
      expect(parse).toHaveBeenCalledTimes(escapedKey ? 0 : 1);
    } finally {
      parse.mockRestore();
    }
  });

  it('reads a text without a backslash once, and any other at most twice', () => {
    const plain = '{"a":[1,"b",{"c":null}],"d":"e"}';
    expect(scanOf(plain)).toEqual({ escapedKey: false, reads: plain.length });
    const shapes: [string, string, boolean][] = [
      // Each escape jumps within one long string: the closing quote is found once.
      ['one string of escapes', `{"a":"${'\\n'.repeat(2_000)}"}`, false],
      // The one backslash is at the end: it is found once, not again for each string before it.
      ['a backslash after many strings', `[${'"a",'.repeat(2_000)}"\\n"]`, false],
      // No backslash after the first string: the end is not searched again for each string.
      ['many strings after the last backslash', `["\\n"${',"a"'.repeat(2_000)}]`, false],
      ['an escaped key after many keys', `{${'"a":1,'.repeat(2_000)}"\\n":1}`, true],
      ['escaped values and keys', `{${'"\\"":"\\\\",'.repeat(1_000)}"":0}`, true],
    ];
    for (const [shape, text, escapedKey] of shapes) {
      const scan = scanOf(text);
      expect({ shape, escapedKey: scan.escapedKey }).toEqual({ shape, escapedKey });
      expect({ shape, twice: scan.reads <= 2 * text.length }).toEqual({ shape, twice: true });
    }
  });

  it('reads any JSON text at most twice, backslashes or not', () => {
    const value = fc.jsonValue({ maxDepth: 3, stringUnit: fc.constantFrom('a', '"', '\\', '\n', ':', ' ') });
    fc.assert(
      fc.property(value, fc.constantFrom(undefined, 1), (v, space) => {
        const text = JSON.stringify(v, null, space);
        const { reads } = scanOf(text);
        if (text.includes('\\')) expect(reads).toBeLessThanOrEqual(2 * text.length);
        else expect(reads).toBe(text.length);
      }),
      { numRuns: 500 },
    );
  });

  it('finds an escaped key exactly where JSON.stringify escaped one, at any spacing', () => {
    const anyKeyEscaped = (value: unknown): boolean =>
      Array.isArray(value)
        ? value.some(anyKeyEscaped)
        : value !== null && typeof value === 'object'
          ? Object.entries(value).some(([key, v]) => JSON.stringify(key).includes('\\') || anyKeyEscaped(v))
          : false;
    const value = fc.jsonValue({
      maxDepth: 4,
      stringUnit: fc.constantFrom('a', '"', '\\', '\n', ':', ' ', '\u0001', 'é'),
    });
    fc.assert(
      fc.property(value, fc.constantFrom(undefined, 1, '\t'), (v, space) => {
        const text = JSON.stringify(v, null, space);
        expect(hasEscapedKey(text)).toBe(anyKeyEscaped(v));
        // Written back to the same text, not compared with JSON.parse's reading: that can be
        // the one with a renamed key.
        expect(JSON.stringify(parseJsonText(text), null, space)).toBe(text);
      }),
      { numRuns: 3_000 },
    );
  });

  it('reads every key as an own data property: __proto__, duplicates (the last wins), odd keys', () => {
    const parsed = parseJsonText('{"__proto__":{"x":1},"a":1,"a":2,"\\u0000":"\\ud800","":[]}') as Record<
      string,
      unknown
    >;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['__proto__', 'a', '\u0000', '']);
    // The descriptor JSON.parse gives every property.
    expect(Object.getOwnPropertyDescriptor(parsed, '__proto__')).toEqual({
      value: { x: 1 },
      writable: true,
      enumerable: true,
      configurable: true,
    });
    expect(parsed.a).toBe(2);
    expect(parsed['\u0000']).toBe('\ud800');
  });

  it('reads the values JSON.parse reads: numbers, literals, escapes, nesting', () => {
    expect(
      parseWithoutKeyCache('[-0, 1e400, -1.5E-3, 12345678901234567890, true, false, null, "\\/\\b\\f\\t"]'),
    ).toEqual([-0, Infinity, -0.0015, 12345678901234567000, true, false, null, '/\b\f\t']);
    expect(Object.is((parseWithoutKeyCache('[-0]') as number[])[0], -0)).toBe(true);
    expect(parseWithoutKeyCache(' \t\r\n"\\u00e9" ')).toBe('é');
    expect(parseWithoutKeyCache('{"a":{"b":[[],{}]}}')).toEqual({ a: { b: [[], {}] } });
  });

  it('says what it refused and where', () => {
    expect(() => parseWithoutKeyCache('')).toThrow(
      new SyntaxError('invalid JSON: ValueExpected at position 0'),
    );
    expect(() => parseWithoutKeyCache('[1,]')).toThrow(
      new SyntaxError('invalid JSON: ValueExpected at position 3'),
    );
    expect(() => parseWithoutKeyCache('{"a" 1} x')).toThrow(
      new SyntaxError('invalid JSON: ColonExpected at position 5'),
    );
  });

  it.each([
    ['', 'nothing'],
    ['{"a":1,}', 'a trailing comma'],
    ['[1,]', 'a trailing comma in an array'],
    ['{"a":1} // x', 'a comment'],
    ['/* x */ 1', 'a comment first'],
    ['1 2', 'two values'],
    ['{"a" 1}', 'no colon'],
    ["{'a':1}", 'single quotes'],
    ['{a:1}', 'an unquoted key'],
    ['"\\x"', 'an unknown escape'],
    ['"a\u0001"', 'a control character in a string'],
    ['01', 'a leading zero'],
    ['NaN', 'NaN'],
    ['\u00a0 1', 'a no-break space'],
    ['\ufeff1', 'a byte order mark'],
    ['[1', 'an unclosed array'],
  ])('refuses %j (%s) with a SyntaxError, as JSON.parse does', (text) => {
    expect(refusedNatively(text)).toBe(true);
    expect(() => parseWithoutKeyCache(text)).toThrow(SyntaxError);
    expect(() => parseJsonText(`${text}\\`)).toThrow(SyntaxError);
  });

  it('agrees with JSON.parse on what is JSON, over near-JSON texts and any Unicode', () => {
    const json = fc.jsonValue().map((value) => JSON.stringify(value));
    const broken = fc
      .tuple(
        json,
        fc.nat(),
        fc.nat({ max: 3 }),
        fc.constantFrom(
          '',
          ' ',
          '\\',
          '"',
          '0',
          '-',
          '.',
          'e',
          '+',
          ',',
          '}',
          ']',
          '\u00a0',
          '\u2028',
          '\u0001',
          '01',
          '1.',
          '.5',
          'tru',
          '\t',
          '\n',
          '/**/',
          '\\u00',
          '\\x',
          'NaN',
        ),
      )
      .map(([text, at, cut, insert]) => {
        const i = at % (text.length + 1);
        return text.slice(0, i) + insert + text.slice(i + cut);
      });
    fc.assert(
      fc.property(fc.oneof(json, broken, fc.string({ unit: 'binary' })), (text) => {
        if (refusedNatively(text)) {
          expect(() => parseWithoutKeyCache(text)).toThrow(SyntaxError);
        } else {
          expect(parseWithoutKeyCache(text)).toEqual(JSON.parse(text));
        }
      }),
      { numRuns: 5_000 },
    );
  });

  it('reads back any JSON value it was written from, odd keys and full Unicode included', () => {
    const key = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.constantFrom('', '\\', '\n', '"', '\r', '__proto__', 'constructor', '\u0000'),
    );
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        fc.string({ unit: 'binary' }),
        fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => (d === 0 ? 0 : d)),
        fc.boolean(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 4 }),
        fc.array(fc.tuple(key, tie('node')), { maxLength: 5 }).map((entries) => {
          const object: Record<string, unknown> = {};
          for (const [k, v] of entries)
            Object.defineProperty(object, k, {
              value: v,
              enumerable: true,
              writable: true,
              configurable: true,
            });
          return object;
        }),
      ),
    })).node;
    fc.assert(
      fc.property(value, (input) => {
        // The oracle is the value itself, not JSON.parse: -0 is left out, JSON writes it as 0.
        expect(parseJsonText(JSON.stringify(input))).toEqual(input);
      }),
      { numRuns: 2_000 },
    );
  });
});
