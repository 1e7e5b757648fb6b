import { UnserializableValue } from './copy-text';

// PostgreSQL's COPY text, field by field, both ways: pure. A move between warehouses carries
// rows in this text whatever the engines (RowBatch), so an engine that is not PostgreSQL reads
// and writes it here. See https://www.postgresql.org/docs/15/sql-copy.html ("Text Format").

const escapable = /[\\\n\r\t]/g;
const escapes: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * One field as COPY text: `\N` for null; backslash, newline, carriage return and tab escaped.
 * A NUL is refused (PostgreSQL text cannot hold one) as data.
 */
export function copyField(value: string | null): string {
  if (value === null) return '\\N';
  if (value.includes('\u0000')) throw new UnserializableValue('text with a NUL character cannot be copied');
  return value.replace(escapable, (c) => escapes[c] as string);
}

/** A row of fields as one line of COPY text, without its newline. */
export const copyLine = (fields: readonly (string | null)[]): string => fields.map(copyField).join('\t');

const simple: Record<string, number> = { b: 8, f: 12, n: 10, r: 13, t: 9, v: 11 };
const octal = /^[0-7]{1,3}/;
const hex = /^x[0-9a-fA-F]{1,2}/;
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The fields of one line of COPY text (without its newline): `\N` alone is null; `\b \f \n \r
 * \t \v`, octal `\ooo` and hex `\xhh` (bytes, decoded as UTF-8 with their neighbours), and any
 * other escaped character stands for itself, as PostgreSQL's COPY FROM reads them.
 */
export function parseCopyLine(line: string): (string | null)[] {
  return line.split('\t').map((raw) => {
    if (raw === '\\N') return null;
    if (!raw.includes('\\')) return raw;
    let out = '';
    let bytes: number[] = [];
    // Called before every character that is not a byte: with no bytes it decodes to ''.
    const flush = () => {
      try {
        out += decoder.decode(new Uint8Array(bytes));
      } catch {
        throw new UnserializableValue('COPY text with bytes that are not UTF-8');
      }
      bytes = [];
    };
    for (let i = 0; i < raw.length; i += 1) {
      const c = raw[i] as string;
      if (c !== '\\') {
        flush();
        out += c;
        continue;
      }
      const rest = raw.slice(i + 1);
      const o = octal.exec(rest);
      const h = o ? null : hex.exec(rest);
      if (o) {
        bytes.push(parseInt(o[0], 8) & 0xff);
        i += o[0].length;
      } else if (h) {
        bytes.push(parseInt(h[0].slice(1), 16));
        i += h[0].length;
      } else {
        flush();
        const next = rest[0];
        if (next === undefined) throw new UnserializableValue('COPY text ends with a backslash');
        out += next in simple ? String.fromCharCode(simple[next] as number) : next;
        i += 1;
      }
    }
    flush();
    if (out.includes('\u0000')) throw new UnserializableValue('COPY text with a NUL character');
    return out;
  });
}

/** The rows of a batch of COPY text: one a line, each ending with a newline. */
export function parseCopyText(text: string): (string | null)[][] {
  const lines = text.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines.map(parseCopyLine);
}

// Times: PostgreSQL prints a timestamptz (DateStyle ISO) as `YYYY-MM-DD HH:MM:SS[.ffffff]±HH[:MM[:SS]]`
// with ` BC` for years before 1; it reads ISO 8601 as well. Kept as microseconds since the epoch
// (a BigInt: the years 0001-9999 pass 2^53 microseconds), never through a JavaScript Date.

const timePattern =
  /^(\d{4,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(Z|[+-]\d{2}(?::?\d{2}(?::?\d{2})?)?)?( BC)?$/;

/** Days since 1970-01-01 of a proleptic Gregorian date (year 0 is 1 BC). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(days: number): [year: number, month: number, day: number] {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (month <= 2 ? 1 : 0), month, day];
}

const microsPerDay = 86_400_000_000n;

/** A timestamptz as PostgreSQL prints or reads it, in microseconds since the epoch (UTC). */
export function parseTimestamp(text: string): bigint {
  const m = timePattern.exec(text);
  if (!m) throw new UnserializableValue(`not a timestamp: ${text.slice(0, 40)}`);
  // `Z` and no zone have no digits: offset 0.
  const [, y, mo, d, h, mi, s, frac = '', zone = '', bc] = m;
  const year = bc ? 1 - Number(y) : Number(y);
  const [month, day, hour, minute, second] = [mo, d, h, mi, s].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  // A day the month lacks (00, 02-30, 32) comes back from the days as another day: refused below.
  if (month < 1 || month > 12 || hour > 24 || minute > 59 || second > 60)
    throw new UnserializableValue(`not a timestamp: ${text.slice(0, 40)}`);
  const days = daysFromCivil(year, month, day);
  if (civilFromDays(days)[2] !== day) throw new UnserializableValue(`not a timestamp: ${text.slice(0, 40)}`);
  const digits = zone.slice(1).replace(/:/g, ''); // Number('') is 0
  const offset =
    (Number(digits.slice(0, 2)) * 3600 + Number(digits.slice(2, 4)) * 60 + Number(digits.slice(4, 6))) *
    (zone.startsWith('-') ? -1 : 1);
  const seconds = BigInt(days) * 86_400n + BigInt(hour * 3600 + minute * 60 + second - offset);
  return seconds * 1_000_000n + BigInt(frac.padEnd(6, '0'));
}

/** The UTC parts of an instant: year (0 is 1 BC), month, day and the microseconds of the day. */
function utcParts(micros: bigint): { year: number; month: number; day: number; dayMicros: bigint } {
  let days = micros / microsPerDay;
  let dayMicros = micros % microsPerDay;
  if (dayMicros < 0n) {
    dayMicros += microsPerDay;
    days -= 1n;
  }
  const [year, month, day] = civilFromDays(Number(days));
  return { year, month, day, dayMicros };
}

const pad = (n: number | bigint, width = 2) => String(n).padStart(width, '0');

/**
 * An instant as `YYYY-MM-DD<sep>HH:MM:SS.ffffff`, UTC, for the years 0001-9999 only (a fixed
 * width); null outside them.
 */
export function utcText(micros: bigint, separator: 'T' | ' '): string | null {
  const { year, month, day, dayMicros } = utcParts(micros);
  if (year < 1 || year > 9999) return null;
  const seconds = dayMicros / 1_000_000n;
  return `${pad(year, 4)}-${pad(month)}-${pad(day)}${separator}${pad(seconds / 3600n)}:${pad((seconds / 60n) % 60n)}:${pad(seconds % 60n)}.${pad(dayMicros % 1_000_000n, 6)}`;
}
