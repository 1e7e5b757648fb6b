/**
 * Event date-times (docs/delivery-and-destinations.md, "What happens to bad data"). One parser serves the validator (as
 * the schema's `date-time` format) and the normalizer, so a time the door accepts is exactly a
 * time the consumers can turn into a warehouse `timestamptz`.
 *
 * - RFC 3339: `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)`; `t`, `z` and a space separator are
 *   accepted as RFC 3339 allows. Fractions of any length are read to the millisecond.
 * - The date must exist (no 2024-02-30, no month 13, no hour 24).
 * - A leap second, `23:59:60` in UTC, is accepted and read as PostgreSQL reads it: the first
 *   instant of the next day. `:60` anywhere else is refused.
 * - The instant, once the offset is applied, must lie in the years 0001 to 9999 UTC: what both
 *   JavaScript and PostgreSQL hold and print the same way (PostgreSQL has no year 0).
 */
/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
export const eventTimeRange = { min: -62_135_596_800_000, max: 253_402_300_799_999 } as const;

const daysIn = (year: number, month: number): number =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : month === 4 || month === 6 || month === 9 || month === 11
      ? 30
      : 31;

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

const ZERO = 48;

/** The number written by `count` ASCII digits at `at`, or -1 when one of them is not a digit. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) {
    const digit = text.charCodeAt(i) - ZERO;
    if (!(digit >= 0 && digit <= 9)) return -1;
    value = value * 10 + digit;
  }
  return value;
}

/** True when `ms` is an instant events may carry. */
export const inEventTimeRange = (ms: number): boolean =>
  Number.isFinite(ms) && ms >= eventTimeRange.min && ms <= eventTimeRange.max;

/**
 * Milliseconds since the epoch, or undefined when `text` is not an accepted event date-time.
 * Read character by character rather than by a regular expression: every event's timestamps
 * pass here at the door and again in each consumer (docs/performance.md).
 */
export function parseEventTime(text: unknown): number | undefined {
  // Stryker disable next-line ConditionalExpression: equivalent, a shorter text fails the separator checks below; this spares the work
  if (typeof text !== 'string' || text.length < 20) return undefined;
  const separator = text[10];
  if (text[4] !== '-' || text[7] !== '-' || text[13] !== ':' || text[16] !== ':') return undefined;
  if (separator !== 'T' && separator !== 't' && separator !== ' ') return undefined;
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  // A letter in the year reads as -1, which the range check at the end refuses.
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || second < 0 || second > 60) return undefined;
  // A fraction of any length, read to the millisecond.
  let at = 19;
  let millis = 0;
  if (text[at] === '.') {
    const first = at + 1;
    for (at = first; digitsAt(text, at, 1) >= 0; at++) {
      if (at - first < 3) millis = millis * 10 + digitsAt(text, at, 1);
    }
    if (at === first) return undefined;
    for (let place = at - first; place < 3; place++) millis *= 10;
  }
  let offsetMinutes = 0;
  const zone = text[at];
  if (zone === 'Z' || zone === 'z') {
    if (text.length !== at + 1) return undefined;
  } else if (zone === '+' || zone === '-') {
    if (text.length !== at + 6 || text[at + 3] !== ':') return undefined;
    const offsetHours = digitsAt(text, at + 1, 2);
    const offsetMins = digitsAt(text, at + 4, 2);
    if (offsetHours < 0 || offsetHours > 23 || offsetMins < 0 || offsetMins > 59) return undefined;
    offsetMinutes = (zone === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  } else {
    return undefined;
  }
  const utcMinuteOfDay = (((hour * 60 + minute - offsetMinutes) % 1440) + 1440) % 1440;
  if (second === 60 && utcMinuteOfDay !== 1439) return undefined;
  const ms =
    daysFromCivil(year, month, day) * 86_400_000 +
    ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 +
    millis;
  return inEventTimeRange(ms) ? ms : undefined;
}

/** The canonical form stored and forwarded: `YYYY-MM-DDThh:mm:ss.sssZ`. */
export function eventTimeIso(text: unknown): string | undefined {
  const ms = parseEventTime(text);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
