import fc from 'fast-check';
import { DateTime } from 'luxon';
import { nextRunAt, type Schedule } from './next-run';

const zones = [
  'America/New_York',
  'Europe/Berlin',
  'Africa/Cairo',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'UTC',
];
const daily = (anchorTime: string, anchorTimezone: string, frequencyValue = 1): Schedule => ({
  frequencyValue,
  frequencyUnit: 'days',
  anchorTime,
  anchorTimezone,
});
const iso = (date: Date) => date.toISOString();

describe('nextRunAt: examples around daylight-saving changes', () => {
  it('keeps a daily sync at its local time across the change (Berlin, spring and autumn)', () => {
    const schedule = daily('09:00', 'Europe/Berlin');
    expect(iso(nextRunAt(schedule, new Date('2026-03-28T12:00:00Z')))).toBe('2026-03-29T07:00:00.000Z');
    expect(iso(nextRunAt(schedule, new Date('2026-03-27T12:00:00Z')))).toBe('2026-03-28T08:00:00.000Z');
    expect(iso(nextRunAt(schedule, new Date('2026-10-25T06:00:00Z')))).toBe('2026-10-25T08:00:00.000Z');
  });

  it('moves a time in the spring gap forward by the gap, and runs a time in the autumn overlap once, first', () => {
    // Berlin 2026-03-29: 02:00 -> 03:00. 02:30 does not exist: 03:30 CEST.
    const gap = daily('02:30', 'Europe/Berlin');
    expect(iso(nextRunAt(gap, new Date('2026-03-29T00:00:00Z')))).toBe('2026-03-29T01:30:00.000Z');
    // Berlin 2026-10-25: 03:00 -> 02:00. 02:30 happens twice: the first (CEST, 00:30Z), once.
    const overlap = daily('02:30', 'Europe/Berlin');
    const first = nextRunAt(overlap, new Date('2026-10-24T12:00:00Z'));
    expect(iso(first)).toBe('2026-10-25T00:30:00.000Z');
    expect(iso(nextRunAt(overlap, first))).toBe('2026-10-26T01:30:00.000Z');
    // Lord Howe moves by 30 minutes (2026-10-04 02:00 -> 02:30): 02:15 runs at 02:45 (+11:00).
    expect(iso(nextRunAt(daily('02:15', 'Australia/Lord_Howe'), new Date('2026-10-03T12:00:00Z')))).toBe(
      '2026-10-03T15:45:00.000Z',
    );
  });

  it('runs a time in Lord Howe’s 30-minute overlap once, at the first occurrence', () => {
    // 2026-04-05 02:00 (+11:00) -> 01:30 (+10:30): 01:45 happens twice.
    const first = nextRunAt(daily('01:45', 'Australia/Lord_Howe'), new Date('2026-04-04T12:00:00Z'));
    expect(iso(first)).toBe('2026-04-04T14:45:00.000Z');
    expect(iso(nextRunAt(daily('01:45', 'Australia/Lord_Howe'), first))).toBe('2026-04-05T15:15:00.000Z');
  });

  it('runs hourly schedules every elapsed hour: none skipped or doubled when the clocks change', () => {
    const hourly: Schedule = {
      frequencyValue: 1,
      frequencyUnit: 'hours',
      anchorTime: '00:00',
      anchorTimezone: 'America/New_York',
    };
    const runs: string[] = [];
    let at = new Date('2026-03-08T05:30:00Z'); // 00:30 EST, the night the clocks jump at 02:00
    for (let i = 0; i < 4; i += 1) {
      at = nextRunAt(hourly, at);
      runs.push(iso(at));
    }
    expect(runs).toEqual([
      '2026-03-08T06:00:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T08:00:00.000Z',
      '2026-03-08T09:00:00.000Z',
    ]);
  });

  it('counts every N days from the reference date', () => {
    const everyThird = daily('06:00', 'UTC', 3);
    const since = new Date('2026-01-01T00:00:00Z');
    expect(iso(nextRunAt(everyThird, new Date('2026-01-01T07:00:00Z'), since))).toBe(
      '2026-01-04T06:00:00.000Z',
    );
    expect(iso(nextRunAt(everyThird, new Date('2026-01-04T05:00:00Z'), since))).toBe(
      '2026-01-04T06:00:00.000Z',
    );
    // Not on the days between, even before their anchor time.
    expect(iso(nextRunAt(everyThird, new Date('2026-01-02T05:00:00Z'), since))).toBe(
      '2026-01-04T06:00:00.000Z',
    );
    expect(iso(nextRunAt(everyThird, new Date('2026-01-06T05:00:00Z'), since))).toBe(
      '2026-01-07T06:00:00.000Z',
    );
    // Before the reference date: the same grid, counted backwards.
    expect(iso(nextRunAt(everyThird, new Date('2025-12-30T07:00:00Z'), since))).toBe(
      '2026-01-01T06:00:00.000Z',
    );
    expect(iso(nextRunAt(everyThird, new Date('2025-12-28T05:00:00Z'), since))).toBe(
      '2025-12-29T06:00:00.000Z',
    );
  });

  it('refuses a malformed anchor time, an unknown zone and a zero frequency', () => {
    for (const time of ['25:00', '109:00', '09:000', '9:00', ' 09:00'])
      expect(() => nextRunAt(daily(time, 'UTC'), new Date())).toThrow(/HH:mm/);
    expect(() => nextRunAt(daily('09:00', 'Mars/Olympus'), new Date())).toThrow(/IANA/);
    expect(() => nextRunAt(daily('09:00', 'UTC', 0), new Date())).toThrow(/at least 1/);
  });
});

describe('nextRunAt: properties across zones with unusual rules', () => {
  const instant = fc.date({
    min: new Date('2020-01-01T00:00:00Z'),
    max: new Date('2032-12-31T00:00:00Z'),
    noInvalidDate: true,
  });
  const anchor = fc
    .tuple(fc.integer({ min: 0, max: 23 }), fc.constantFrom(0, 15, 30, 45))
    .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`);
  const scheduleArb = fc.record({
    frequencyValue: fc.integer({ min: 1, max: 7 }),
    frequencyUnit: fc.constantFrom('hours' as const, 'days' as const),
    anchorTime: anchor,
    anchorTimezone: fc.constantFrom(...zones),
  });

  it('is strictly after `after`, within one period (plus a daylight-saving hour), and stable just before it', () => {
    fc.assert(
      fc.property(scheduleArb, instant, instant, (schedule, after, since) => {
        const next = nextRunAt(schedule, after, since);
        const period = schedule.frequencyValue * (schedule.frequencyUnit === 'hours' ? 1 : 24) * 3600_000;
        expect(next.getTime()).toBeGreaterThan(after.getTime());
        expect(next.getTime() - after.getTime()).toBeLessThanOrEqual(period + 3600_000);
        expect(nextRunAt(schedule, new Date(next.getTime() - 1), since).getTime()).toBe(next.getTime());
      }),
      { numRuns: 400 },
    );
  });

  it('daily runs fall on the anchor wall time (or just after a gap), N local days apart, once per local day', () => {
    fc.assert(
      fc.property(scheduleArb, instant, (s, after) => {
        const schedule = { ...s, frequencyUnit: 'days' as const };
        const [hour, minute] = schedule.anchorTime.split(':').map(Number) as [number, number];
        const next = nextRunAt(schedule, after);
        const following = nextRunAt(schedule, next);
        for (const run of [next, following]) {
          const local = DateTime.fromJSDate(run, { zone: schedule.anchorTimezone });
          const wanted = local.set({ hour, minute });
          const inGap = wanted.hour !== hour || wanted.minute !== minute;
          if (!inGap) expect([local.hour, local.minute]).toEqual([hour, minute]);
          else
            expect(local.toMillis()).toBeGreaterThan(
              local.startOf('day').plus({ hours: hour }).toMillis() - 1,
            );
        }
        const a = DateTime.fromJSDate(next, { zone: schedule.anchorTimezone }).startOf('day');
        const b = DateTime.fromJSDate(following, { zone: schedule.anchorTimezone }).startOf('day');
        expect(Math.round(b.diff(a, 'days').days)).toBe(schedule.frequencyValue);
      }),
      { numRuns: 400 },
    );
  });

  it('hourly runs are whole multiples of N hours apart', () => {
    fc.assert(
      fc.property(scheduleArb, instant, (s, after) => {
        const schedule = { ...s, frequencyUnit: 'hours' as const };
        const next = nextRunAt(schedule, after);
        expect(nextRunAt(schedule, next).getTime() - next.getTime()).toBe(schedule.frequencyValue * 3600_000);
      }),
      { numRuns: 300 },
    );
  });
});
