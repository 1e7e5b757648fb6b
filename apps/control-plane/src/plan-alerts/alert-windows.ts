// The alert windows' arithmetic (docs/tracking-plans.md, "Alerts"): pure, so that what is due
// and what is too old to count is tested without a clock.

export const alertWindowMinutes = [1, 5, 10, 15, 30, 60, 120, 180, 240, 360, 720, 1440] as const;

const MINUTE_MS = 60_000;

/** The start of the window of `minutes` holding `at`: UTC multiples of the window since the epoch. */
export const windowStartOf = (at: number, minutes: number): number =>
  Math.floor(at / (minutes * MINUTE_MS)) * minutes * MINUTE_MS;

/** Whether the window ending at `end` may be summed: ended, and `graceMs` passed for counts still arriving. */
export const windowDue = (end: number, now: number, graceMs: number): boolean => end + graceMs <= now;

/**
 * Where a sender resumes when the window after `lastEnd` starts before the minute buckets
 * still kept (`keptMs` back from now): the first whole window inside them. Otherwise `lastEnd`.
 */
export function resumeAfterExpiry(lastEnd: number, minutes: number, now: number, keptMs: number): number {
  const oldestKept = now - keptMs;
  if (lastEnd >= oldestKept) return lastEnd;
  const size = minutes * MINUTE_MS;
  return Math.ceil(oldestKept / size) * size;
}
