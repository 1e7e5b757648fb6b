import fc from 'fast-check';
import { eventTimeIso, eventTimeRange, parseEventTime } from './event-time';
import { validateEvent } from './event-validator';

const at = (iso: string) => new Date(iso).getTime();

describe('parseEventTime', () => {
  it.each([
    ['2026-01-31T12:00:00.000Z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31t12:00:00z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31 12:00:00Z', '2026-01-31T12:00:00.000Z'],
    ['2026-01-31T12:00:00.123456789Z', '2026-01-31T12:00:00.123Z'],
    ['2026-01-31T12:00:00.5Z', '2026-01-31T12:00:00.500Z'],
    ['2026-01-31T12:00:00+14:00', '2026-01-30T22:00:00.000Z'],
    ['2026-01-31T12:00:00-14:00', '2026-02-01T02:00:00.000Z'],
    ['2024-02-29T00:00:00Z', '2024-02-29T00:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    // A leap second is read as PostgreSQL reads it: the first instant of the next day.
    ['2016-12-31T23:59:60Z', '2017-01-01T00:00:00.000Z'],
    ['2016-12-31T23:59:60.250Z', '2017-01-01T00:00:00.250Z'],
    ['2017-01-01T00:59:60+01:00', '2017-01-01T00:00:00.000Z'],
    ['0001-01-01T00:00:00Z', '0001-01-01T00:00:00.000Z'],
    ['0001-01-01T00:00:00-01:00', '0001-01-01T01:00:00.000Z'],
    ['0099-06-15T00:00:00Z', '0099-06-15T00:00:00.000Z'],
    ['9999-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'],
    // Written in year 0 at a negative offset, but an instant of year 1.
    ['0000-12-31T23:30:00-01:00', '0001-01-01T00:30:00.000Z'],
  ])('reads %s as %s', (text, iso) => {
    expect(eventTimeIso(text)).toBe(iso);
  });

  it.each([
    ['2024-13-01T00:00:00Z', 'month 13'],
    ['2024-00-10T00:00:00Z', 'month 0'],
    ['2024-02-30T00:00:00Z', 'February 30'],
    ['2023-02-29T00:00:00Z', 'February 29 of a common year'],
    ['1900-02-29T00:00:00Z', 'February 29 of a century that is not a leap year'],
    ['2024-04-31T00:00:00Z', 'April 31'],
    ['2024-01-00T00:00:00Z', 'day 0'],
    ['2024-01-01T24:00:00Z', 'hour 24'],
    ['2024-01-01T23:60:00Z', 'minute 60'],
    ['2024-13-01T99:00:00Z', 'month 13 and hour 99'],
    ['2016-12-31T23:58:60Z', 'a leap second before 23:59'],
    ['2016-12-31T22:59:60Z', 'a leap second at 22:59 UTC'],
    ['2016-12-31T23:59:61Z', 'second 61'],
    ['0000-01-01T00:00:00Z', 'year 0'],
    ['0001-01-01T00:00:00+00:01', 'an instant in year 0 once the offset is applied'],
    ['9999-12-31T23:59:59-00:01', 'an instant in year 10000 once the offset is applied'],
    ['2024-01-01T00:00:00+24:00', 'an offset of 24 hours'],
    ['2024-01-01T00:00:00+01:60', 'an offset minute of 60'],
    ['2024-01-01T00:00:00', 'no time zone'],
    ['2024-01-01T00:00:00.Z', 'an empty fraction'],
    ['2024-01-01', 'a date alone'],
    ['+002024-01-01T00:00:00Z', 'an expanded year'],
    ['2024-01-01T00:00:00Z ', 'a trailing space'],
    ['', 'nothing'],
    ['2024/01-01T00:00:00Z', 'a slash after the year'],
    ['2024-01/01T00:00:00Z', 'a slash after the month'],
    ['2024-01-01T00.00:00Z', 'a dot after the hour'],
    ['2024-01-01T00:00.00Z', 'a dot after the minute'],
    ['2024-01-01T00:00:00*01:00', 'an offset without its sign'],
    ['2024-01-01T00:00:00+01x00', 'an offset without its colon'],
    ['2024-01-01T00:00:00+0a:00', 'a letter in the offset hours'],
    ['2024-01-01T00:00:00+01:0a', 'a letter in the offset minutes'],
    ['20a4-01-01T00:00:00Z', 'a letter in the year'],
    ['20a4-12-31T23:59:59-23:59', 'a letter in the year, and the largest offset back'],
    ['2024-01-01T0a:00:00Z', 'a letter in the hour'],
    ['2024-01-01T00:0a:00Z', 'a letter in the minute'],
    ['2024-01-01T00:00:0aZ', 'a letter in the second'],
  ])('refuses %s (%s)', (text) => {
    expect(parseEventTime(text)).toBeUndefined();
  });

  it('eventTimeIso gives nothing for a text it refuses', () => {
    expect(eventTimeIso('2024-02-30T00:00:00Z')).toBeUndefined();
    expect(eventTimeIso(undefined)).toBeUndefined();
  });

  it('refuses what is not a string', () => {
    expect(parseEventTime(1_700_000_000_000)).toBeUndefined();
    expect(parseEventTime(null)).toBeUndefined();
  });

  it('the range ends are the first and last millisecond of years 1 and 9999', () => {
    expect(new Date(eventTimeRange.min).toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(new Date(eventTimeRange.max).toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(parseEventTime(new Date(eventTimeRange.min - 1).toISOString())).toBeUndefined();
  });

  it('reads every instant of the range back from its ISO form, in any offset', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: eventTimeRange.min + 86_400_000, max: eventTimeRange.max - 86_400_000 }),
        fc.integer({ min: -14 * 60, max: 14 * 60 }),
        (ms, offsetMinutes) => {
          expect(parseEventTime(new Date(ms).toISOString())).toBe(ms);
          // The same instant written in local time at that offset.
          const local = new Date(ms + offsetMinutes * 60_000).toISOString().slice(0, 23);
          const sign = offsetMinutes < 0 ? '-' : '+';
          const abs = Math.abs(offsetMinutes);
          const offset = `${sign}${String(Math.floor(abs / 60)).padStart(2, '0')}:${String(abs % 60).padStart(2, '0')}`;
          expect(parseEventTime(`${local}${offset}`)).toBe(ms);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('the validator uses it: an impossible timestamp is an error of that event, a leap second is not', () => {
    const base = { type: 'track', event: 'x', messageId: 'm', anonymousId: 'a' };
    expect(validateEvent({ ...base, timestamp: '2016-12-31T23:59:60Z' }).valid).toBe(true);
    const invalid = validateEvent({
      ...base,
      timestamp: '2024-02-30T10:00:00Z',
      sentAt: '2024-13-01T99:00:00Z',
    });
    expect(invalid).toEqual({
      valid: false,
      errors: [
        {
          message:
            'timestamp must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z), on a date that exists, in the years 0001-9999',
        },
        {
          message:
            'sentAt must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z), on a date that exists, in the years 0001-9999',
        },
      ],
    });
  });

  it('reads every text exactly as the regular expression it replaced did', () => {
    const digits = (n: number, min: number, max: number) =>
      fc.integer({ min, max }).map((v) => String(v).padStart(n, '0').slice(-n));
    // Mostly in range, sometimes just out of it, so most texts get past the shape to the checks.
    const field = (n: number, min: number, max: number, wide: number) =>
      fc.oneof({ arbitrary: digits(n, min, max), weight: 6 }, { arbitrary: digits(n, 0, wide), weight: 1 });
    const near = fc
      .record({
        year: fc.oneof(
          { arbitrary: digits(4, 1, 9999), weight: 6 },
          { arbitrary: fc.constantFrom('0000', '0001', '1900', '2000', '2024', '9999', '20a4'), weight: 2 },
        ),
        month: fc.oneof(
          { arbitrary: field(2, 1, 12, 19), weight: 9 },
          { arbitrary: fc.constant('1x'), weight: 1 },
        ),
        day: field(2, 1, 31, 39),
        separator: fc.oneof(
          { arbitrary: fc.constantFrom('T', 't', ' '), weight: 6 },
          { arbitrary: fc.constantFrom('x', '-'), weight: 1 },
        ),
        hour: field(2, 0, 24, 29),
        minute: field(2, 0, 60, 69),
        second: field(2, 0, 60, 69),
        fraction: fc.oneof(
          { arbitrary: fc.constant(''), weight: 3 },
          { arbitrary: fc.stringMatching(/^\.\d{1,12}$/), weight: 3 },
          { arbitrary: fc.constant('.'), weight: 1 },
          { arbitrary: fc.stringMatching(/^\.\d{0,3}[^\d]$/), weight: 1 },
        ),
        zone: fc.oneof(
          { arbitrary: fc.constantFrom('Z', 'z'), weight: 3 },
          {
            arbitrary: fc
              .tuple(fc.constantFrom('+', '-'), field(2, 0, 24, 29), field(2, 0, 60, 69))
              .map(([sign, h, m]) => `${sign}${h}:${m}`),
            weight: 3,
          },
          {
            arbitrary: fc.constantFrom('', 'UTC', '+00:00', '-00:00', '+0100', '+01:00 ', '+1:00', '+01:0'),
            weight: 1,
          },
        ),
      })
      .map(
        (p) =>
          `${p.year}-${p.month}-${p.day}${p.separator}${p.hour}:${p.minute}:${p.second}${p.fraction}${p.zone}`,
      );
    // One character of a near text replaced by any character (full Unicode), or dropped.
    const changed = fc
      .tuple(near, fc.nat(), fc.oneof(fc.string({ unit: 'binary', minLength: 0, maxLength: 1 })))
      .map(([text, at, replacement]) => {
        const i = at % text.length;
        return text.slice(0, i) + replacement + text.slice(i + 1);
      });
    fc.assert(
      fc.property(
        fc.oneof({ arbitrary: near, weight: 4 }, changed, fc.string({ unit: 'binary' })),
        (text) => {
          expect(parseEventTime(text)).toBe(referenceParseEventTime(text));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  it('agrees with Date for every RFC 3339 text Date reads the same way', () => {
    fc.assert(
      fc.property(
        fc.date({
          min: new Date('1970-01-01T00:00:00Z'),
          max: new Date('2999-12-31T00:00:00Z'),
          noInvalidDate: true,
        }),
        (date) => {
          const iso = date.toISOString();
          expect(parseEventTime(iso)).toBe(at(iso));
        },
      ),
    );
  });
});

/**
 * The regular-expression parser that parseEventTime replaced (for speed), kept as the oracle of
 * the property above.
 */
function referenceParseEventTime(text: string): number | undefined {
  const m =
    /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/.exec(
      text,
    );
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  if (month < 1 || month > 12 || day < 1 || day > days) return undefined;
  if (hour > 23 || minute > 59 || second > 60) return undefined;
  let offsetMinutes = 0;
  if (!m[8]) {
    const offsetHours = Number(m[10]);
    const offsetMins = Number(m[11]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  const millis = Number((m[7] ?? '').slice(0, 3).padEnd(3, '0'));
  const date = new Date(Date.UTC(2000, month - 1, day, hour, minute, 0, millis));
  date.setUTCFullYear(year);
  const utcMinuteOfDay = (((hour * 60 + minute - offsetMinutes) % 1440) + 1440) % 1440;
  if (second === 60 && utcMinuteOfDay !== 1439) return undefined;
  const ms = date.getTime() + second * 1000 - offsetMinutes * 60_000;
  return ms >= eventTimeRange.min && ms <= eventTimeRange.max ? ms : undefined;
}
