import fc from 'fast-check';
import { copyText, UnserializableValue } from './copy-text';
import { copyField, copyLine, parseCopyLine, parseCopyText, parseTimestamp, utcText } from './copy-fields';

const noNul = fc.string({ unit: 'binary' }).filter((s) => !s.includes('\u0000'));
/** Text as UTF-8 carries it: no lone surrogates (PostgreSQL's COPY replaces them before). */
const utf8 = fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('\u0000'));
const field = fc.option(utf8, { nil: null });

describe('COPY text fields', () => {
  it('reads back every row it prints, nulls and full Unicode included', () => {
    fc.assert(
      fc.property(fc.array(fc.array(field, { minLength: 1, maxLength: 6 }), { maxLength: 6 }), (rows) => {
        const text = rows.map((r) => `${copyLine(r)}\n`).join('');
        expect(parseCopyText(text)).toEqual(rows);
      }),
    );
  });

  it('prints what copyText (the row writer) prints for text', () => {
    fc.assert(
      fc.property(noNul, (value) => {
        expect(`${copyField(value)}\n`).toBe(copyText([{ v: value }], ['v'], new Set()));
      }),
    );
  });

  it('reads the escapes PostgreSQL writes and reads: \\N, \\b \\f \\v, octal and hex bytes as UTF-8', () => {
    expect(parseCopyLine('\\N\t\\\\N\t')).toEqual([null, '\\N', '']);
    expect(parseCopyLine('a\\bb\\fc\\vd\\te\\nf\\rg\\\\h\\qi')).toEqual(['a\bb\fc\vd\te\nf\rg\\hqi']);
    expect(parseCopyLine('\\303\\274ber\\xe2\\x82\\xac\\101')).toEqual(['über€A']);
  });

  it('refuses a NUL, bytes that are not UTF-8 and a trailing backslash as data', () => {
    expect(() => copyField('a\u0000b')).toThrow(UnserializableValue);
    expect(() => parseCopyLine('a\\000b')).toThrow(UnserializableValue);
    expect(() => parseCopyLine('\\xff')).toThrow('COPY text with bytes that are not UTF-8');
    expect(() => parseCopyLine('a\\')).toThrow('COPY text ends with a backslash');
  });
});

describe('timestamps in COPY text', () => {
  const instant = fc.date({
    min: new Date('0001-01-01T00:00:00.000Z'),
    max: new Date('9999-12-31T23:59:59.999Z'),
    noInvalidDate: true,
  });

  it('reads PostgreSQL ISO output in any offset to the same instant, years 0001-9999', () => {
    fc.assert(
      fc.property(instant, fc.integer({ min: 0, max: 999 }), (date, extraMicros) => {
        const iso = date.toISOString(); // 0001-01-01T00:00:00.000Z
        const micros = BigInt(date.getTime()) * 1000n + BigInt(extraMicros);
        const text = `${iso.slice(0, 10)} ${iso.slice(11, 23)}${String(extraMicros).padStart(3, '0')}+00`;
        expect(parseTimestamp(text)).toBe(micros);
        expect(utcText(micros, 'T')).toBe(`${iso.slice(0, 23)}${String(extraMicros).padStart(3, '0')}`);
        expect(parseTimestamp(`${utcText(micros, 'T')}Z`)).toBe(micros);
      }),
    );
  });

  it('applies offsets with minutes and seconds (PostgreSQL prints LMT ones) and BC', () => {
    expect(parseTimestamp('2026-03-01 12:30:00+05:30')).toBe(parseTimestamp('2026-03-01T07:00:00Z'));
    expect(parseTimestamp('0001-01-01 00:00:00-00:53:28')).toBe(parseTimestamp('0001-01-01 00:53:28+00'));
    expect(parseTimestamp('2026-03-01 10:00:00.5-02')).toBe(parseTimestamp('2026-03-01T12:00:00.500000Z'));
    expect(utcText(parseTimestamp('0001-12-31 23:00:00+00 BC'), 'T')).toBeNull();
    expect(utcText(parseTimestamp('9999-12-31 23:59:59.999999-01'), ' ')).toBeNull();
  });

  it('refuses what is not a timestamp', () => {
    for (const text of ['2026-02-30 00:00:00+00', '2026-13-01 00:00:00+00', 'infinity', '2026-03-01'])
      expect(() => parseTimestamp(text)).toThrow(UnserializableValue);
  });
});
