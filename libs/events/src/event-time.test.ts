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
  ])('refuses %s (%s)', (text) => {
    expect(parseEventTime(text)).toBeUndefined();
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
