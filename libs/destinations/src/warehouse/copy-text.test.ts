import { copyText, jsonbText, UnserializableValue } from './copy-text';

const none = new Set<string>();

describe('copyText', () => {
  it('writes one line per row, tab-separated, in the columns’ order, \\N for null and missing', () => {
    const rows = [
      { a: 'x', b: 1, c: null },
      { b: true, a: 'y' },
    ];
    expect(copyText(rows, ['a', 'b', 'c'], none)).toBe('x\t1\t\\N\ny\ttrue\t\\N\n');
  });

  it('is empty for no rows, and a line per row even with one column', () => {
    expect(copyText([], ['a'], none)).toBe('');
    expect(copyText([{ a: 'v' }, { a: '' }], ['a'], none)).toBe('v\n\n');
  });

  it('escapes backslash, newline, carriage return, tab and NUL, and nothing else', () => {
    expect(copyText([{ a: 'a\\b\nc\rd\te\u0000f' }], ['a'], none)).toBe('a\\\\b\\nc\\rd\\te\\000f\n');
    expect(copyText([{ a: '\u00000' }], ['a'], none)).toBe('\\0000\n');
    expect(copyText([{ a: '\n' }, { a: '\\' }, { a: '\t\r' }], ['a'], none)).toBe('\\n\n\\\\\n\\t\\r\n');
    expect(copyText([{ a: '\\N' }], ['a'], none)).toBe('\\\\N\n');
    expect(copyText([{ a: 'é ✓ 𝄞 "q" \\.' }], ['a'], none)).toBe('é ✓ 𝄞 "q" \\\\.\n');
  });

  it('writes JSON columns as JSON, strings included, and escapes the JSON text', () => {
    const json = new Set(['p']);
    expect(copyText([{ p: { k: 'v\tw' }, s: 'plain' }], ['p', 's'], json)).toBe('{"k":"v\\\\tw"}\tplain\n');
    expect(copyText([{ p: 'text' }], ['p'], json)).toBe('"text"\n');
    expect(copyText([{ p: 5 }], ['p'], json)).toBe('5\n');
  });

  it('writes objects as JSON and dates as ISO text in other columns, the rest as their string', () => {
    const when = new Date('2026-03-01T12:00:00.123Z');
    expect(copyText([{ a: when, b: { x: [1] }, c: [1, 2], d: 12.5 }], ['a', 'b', 'c', 'd'], none)).toBe(
      '2026-03-01T12:00:00.123Z\t{"x":[1]}\t[1,2]\t12.5\n',
    );
    expect(copyText([{ a: when }], ['a'], new Set(['a']))).toBe('"2026-03-01T12:00:00.123Z"\n');
  });

  it('refuses a value JSON cannot represent, with SQLSTATE 22000', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(() => copyText([{ a: cyclic }], ['a'], none)).toThrow(UnserializableValue);
    try {
      jsonbText(cyclic);
      throw new Error('serialized a cycle');
    } catch (error) {
      expect(error).toBeInstanceOf(UnserializableValue);
      expect((error as UnserializableValue).code).toBe('22000');
      expect((error as Error).message).toMatch(/^value cannot be serialized as JSON: .*circular/i);
    }
  });
});
