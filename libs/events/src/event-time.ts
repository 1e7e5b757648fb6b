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
const rfc3339 =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
export const eventTimeRange = { min: -62_135_596_800_000, max: 253_402_300_799_999 } as const;

const daysIn = (year: number, month: number): number =>
  month === 2
    ? year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
      ? 29
      : 28
    : [4, 6, 9, 11].includes(month)
      ? 30
      : 31;

/** True when `ms` is an instant events may carry. */
export const inEventTimeRange = (ms: number): boolean =>
  Number.isFinite(ms) && ms >= eventTimeRange.min && ms <= eventTimeRange.max;

/** Milliseconds since the epoch, or undefined when `text` is not an accepted event date-time. */
export function parseEventTime(text: unknown): number | undefined {
  if (typeof text !== 'string') return undefined;
  const m = rfc3339.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMinutes = 0;
  if (!m[8]) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const millis = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'));
  // Date.UTC reads years 0-99 as 1900-1999: build the date in a leap year, then set the year
  // (the day was checked against the real year above, so nothing rolls over).
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, 0, millis));
  date.setUTCFullYear(year);
  const utcMinuteOfDay = (((hour * 60 + minute - offsetMinutes) % 1440) + 1440) % 1440;
  if (second === 60 && utcMinuteOfDay !== 1439) return undefined;
  const ms = date.getTime() + second * 1000 - offsetMinutes * 60_000;
  return inEventTimeRange(ms) ? ms : undefined;
}

/** The canonical form stored and forwarded: `YYYY-MM-DDThh:mm:ss.sssZ`. */
export function eventTimeIso(text: unknown): string | undefined {
  const ms = parseEventTime(text);
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
