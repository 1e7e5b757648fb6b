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

/** The message of what `run` throws (an UnserializableValue), to assert it exactly. */
function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UnserializableValue);
    return (error as Error).message;
  }
  throw new Error('nothing was thrown');
}

describe('COPY text fields, exactly', () => {
  it('escapes each of backslash, newline, carriage return and tab, and prints null as \\N', () => {
    expect(copyField('a\\b\nc\rd\te')).toBe('a\\\\b\\nc\\rd\\te');
    expect(copyField('\\')).toBe('\\\\');
    expect(copyField('\n')).toBe('\\n');
    expect(copyField('\r')).toBe('\\r');
    expect(copyField('\t')).toBe('\\t');
    expect(copyField('\\N')).toBe('\\\\N');
    expect(copyField(null)).toBe('\\N');
    expect(copyField('')).toBe('');
    expect(copyLine(['a\tb', null, '', 'c\\'])).toBe('a\\tb\t\\N\t\tc\\\\');
  });

  it('names what it refuses', () => {
    expect(refusal(() => copyField('a\u0000b'))).toBe('text with a NUL character cannot be copied');
    expect(refusal(() => parseCopyLine('a\\000b'))).toBe('COPY text with a NUL character');
    expect(refusal(() => parseCopyLine('\\x00'))).toBe('COPY text with a NUL character');
  });

  it('reads a field without a backslash as it is, a NUL included (only escapes are decoded)', () => {
    expect(parseCopyLine('a\u0000b\tc')).toEqual(['a\u0000b', 'c']);
  });

  it('reads hex only right after the backslash, and each escape once', () => {
    expect(parseCopyLine('\\qx41')).toEqual(['qx41']);
    expect(parseCopyLine('\\x41\\x4a\\x4B\\x7')).toEqual(['AJK\u0007']);
    expect(parseCopyLine('\\1011\\78')).toEqual(['A1\u00078']);
  });

  it('reads rows with and without a newline after the last one', () => {
    expect(parseCopyText('a\tb')).toEqual([['a', 'b']]);
    expect(parseCopyText('a\tb\n')).toEqual([['a', 'b']]);
    expect(parseCopyText('a\n\\N\n')).toEqual([['a'], [null]]);
    expect(parseCopyText('a\n\n')).toEqual([['a'], ['']]);
    expect(parseCopyText('')).toEqual([]);
  });
});

describe('timestamps in COPY text, exactly', () => {
  const at = (iso: string) => BigInt(Date.parse(iso)) * 1000n;

  it('reads zones: none and Z are UTC; hours, minutes and seconds with or without colons', () => {
    expect(parseTimestamp('2026-03-01 00:00:00')).toBe(at('2026-03-01T00:00:00Z'));
    expect(parseTimestamp('2026-03-01T00:00:00Z')).toBe(at('2026-03-01T00:00:00Z'));
    expect(parseTimestamp('2026-03-01 12:30:00+05:30')).toBe(at('2026-03-01T07:00:00Z'));
    expect(parseTimestamp('2026-03-01 12:30:00+0530')).toBe(at('2026-03-01T07:00:00Z'));
    expect(parseTimestamp('2026-03-01 12:30:00-0530')).toBe(at('2026-03-01T18:00:00Z'));
    expect(parseTimestamp('2026-03-01 12:30:00+05')).toBe(at('2026-03-01T07:30:00Z'));
    expect(parseTimestamp('2026-03-01 12:30:00+05:30:15')).toBe(at('2026-03-01T06:59:45Z'));
    expect(parseTimestamp('2026-03-01 12:30:00+053015')).toBe(at('2026-03-01T06:59:45Z'));
    expect(parseTimestamp('2026-03-01 12:30:00-00:53:28')).toBe(at('2026-03-01T13:23:28Z'));
  });

  it('reads microseconds and BC years (year 0 is 1 BC)', () => {
    expect(parseTimestamp('1970-01-01 00:00:00.000001+00')).toBe(1n);
    expect(parseTimestamp('1970-01-01 00:00:00.5+00')).toBe(500_000n);
    expect(parseTimestamp('1969-12-31 23:59:59.999999+00')).toBe(-1n);
    expect(parseTimestamp('0001-01-01 00:00:00+00 BC')).toBe(at('0000-01-01T00:00:00Z'));
    expect(parseTimestamp('0002-03-01 00:00:00+00 BC')).toBe(at('-000001-03-01T00:00:00Z'));
  });

  it('reads hour 24 and second 60 as the next day and minute, as PostgreSQL does', () => {
    expect(parseTimestamp('2026-03-01 24:00:00+00')).toBe(at('2026-03-02T00:00:00Z'));
    expect(parseTimestamp('2026-03-01 10:59:60+00')).toBe(at('2026-03-01T11:00:00Z'));
  });

  it('refuses months, days, hours, minutes and seconds out of range, naming the text', () => {
    for (const text of [
      '2026-00-15 00:00:00+00',
      '2026-13-01 00:00:00+00',
      '2026-03-00 00:00:00+00',
      '2026-03-32 00:00:00+00',
      '2026-02-29 00:00:00+00',
      '2026-04-31 00:00:00+00',
      '2026-03-01 25:00:00+00',
      '2026-03-01 00:60:00+00',
      '2026-03-01 00:00:61+00',
    ])
      expect(refusal(() => parseTimestamp(text))).toBe(`not a timestamp: ${text}`);
    expect(parseTimestamp('2024-02-29 00:00:00+00')).toBe(at('2024-02-29T00:00:00Z'));
  });

  it('refuses text around a timestamp, naming its first 40 characters', () => {
    for (const text of ['x2026-03-01 00:00:00+00', '2026-03-01 00:00:00+00x', '2026-03-01 00:00:00+00 AD'])
      expect(refusal(() => parseTimestamp(text))).toBe(`not a timestamp: ${text}`);
    const long = 'x'.repeat(50);
    expect(refusal(() => parseTimestamp(long))).toBe(`not a timestamp: ${'x'.repeat(40)}`);
    const badMonth = '000002026-13-01 00:00:00.123456-00:53:28 BC';
    expect(refusal(() => parseTimestamp(badMonth))).toBe(`not a timestamp: ${badMonth.slice(0, 40)}`);
    const badDay = '000002026-02-30 00:00:00.123456-00:53:28 BC';
    expect(refusal(() => parseTimestamp(badDay))).toBe(`not a timestamp: ${badDay.slice(0, 40)}`);
  });

  it('prints the UTC text of days at the ends of centuries and of 400-year eras', () => {
    for (const iso of [
      '2000-02-29T12:00:00.000000',
      '2000-03-01T00:00:00.000000',
      '1600-02-29T23:59:59.999999',
      '2100-02-28T00:00:00.000000',
      '2100-03-01T00:00:00.000000',
      '1900-12-31T00:00:00.000001',
      '0400-02-29T00:00:00.000000',
      '0001-01-01T00:00:00.000000',
      '9999-12-31T23:59:59.999999',
    ]) {
      expect(utcText(parseTimestamp(`${iso}Z`), 'T')).toBe(iso);
      expect(utcText(parseTimestamp(`${iso}Z`), ' ')).toBe(iso.replace('T', ' '));
    }
    expect(utcText(-1n, ' ')).toBe('1969-12-31 23:59:59.999999');
    expect(utcText(parseTimestamp('0001-01-01 00:00:00+00') - 1n, 'T')).toBeNull();
    expect(utcText(parseTimestamp('9999-12-31 23:59:59.999999+00') + 1n, 'T')).toBeNull();
  });
});
