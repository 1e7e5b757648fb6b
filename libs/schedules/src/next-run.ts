import { DateTime, IANAZone } from 'luxon';

export type FrequencyUnit = 'hours' | 'days';

export interface Schedule {
  frequencyValue: number;
  frequencyUnit: FrequencyUnit;
  /** Local wall time `HH:mm` in anchorTimezone. */
  anchorTime: string;
  /** An IANA time zone, e.g. Europe/Berlin. */
  anchorTimezone: string;
}

export class ScheduleError extends Error {}

function parse(schedule: Schedule): { hour: number; minute: number; zone: string } {
  const match = /^([01]\d|2[0-3]):([0-5]\d)$/.exec(schedule.anchorTime);
  if (!match) throw new ScheduleError(`anchor time ${schedule.anchorTime} is not HH:mm`);
  if (!IANAZone.isValidZone(schedule.anchorTimezone))
    throw new ScheduleError(`${schedule.anchorTimezone} is not an IANA time zone`);
  if (!Number.isInteger(schedule.frequencyValue) || schedule.frequencyValue < 1)
    throw new ScheduleError('the frequency must be a whole number of at least 1');
  return { hour: Number(match[1]), minute: Number(match[2]), zone: schedule.anchorTimezone };
}

/**
 * The instant a local wall time happens on a local date. A time in a daylight-saving gap (it
 * does not exist that day) is moved forward by the gap: 02:30 on a day that jumps from 02:00 to
 * 03:00 runs at 03:30. A time in an overlap (it happens twice) runs once, at the earlier instant.
 */
export function wallTimeOn(date: DateTime, hour: number, minute: number): DateTime {
  const resolved = DateTime.fromObject(
    { year: date.year, month: date.month, day: date.day, hour, minute },
    { zone: date.zone },
  );
  // An overlap is at most an hour (30 minutes at Lord Howe): an earlier instant showing the
  // same wall time is the first occurrence (on the same date: the clock went back by `back`).
  for (const back of [60, 30]) {
    const earlier = resolved.minus({ minutes: back });
    if (earlier.hour === hour && earlier.minute === minute) return earlier;
  }
  return resolved;
}

/**
 * When a schedule runs next, strictly after `after`. `since` is the schedule's reference (for
 * example when the source was created):
 * - `days`: at the anchor wall time every N local calendar days counted from `since`'s local
 *   date, so a daily 09:00 Berlin sync stays at 09:00 across daylight-saving changes;
 * - `hours`: every N elapsed hours from the anchor time on `since`'s local date, so an hourly
 *   sync neither skips nor doubles when the clocks change.
 */
export function nextRunAt(schedule: Schedule, after: Date, since: Date = new Date(0)): Date {
  const { hour, minute, zone } = parse(schedule);
  const n = schedule.frequencyValue;
  const reference = DateTime.fromJSDate(since, { zone }).startOf('day');
  if (schedule.frequencyUnit === 'hours') {
    const first = wallTimeOn(reference, hour, minute).toMillis();
    const step = n * 3600_000;
    const runs = Math.floor((after.getTime() - first) / step) + 1;
    return new Date(first + runs * step);
  }
  const today = DateTime.fromJSDate(after, { zone }).startOf('day');
  const elapsed = Math.round(today.diff(reference, 'days').days);
  // The first scheduled day on or after today: one before today runs before `after`.
  // Stryker disable next-line MethodExpression: Math.floor (the scheduled day on or before today) finds the same run, one turn of the loop later
  let day = reference.plus({ days: Math.ceil(elapsed / n) * n });
  for (;;) {
    const run = wallTimeOn(day, hour, minute);
    if (run.toMillis() > after.getTime()) return run.toJSDate();
    day = day.plus({ days: n });
  }
}
