import fc from 'fast-check';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');

  it('reads delta-seconds, decimals included, as ms', () => {
    expect(parseRetryAfter('7', { now })).toBe(7000);
    expect(parseRetryAfter('2.0', { now })).toBe(2000);
    expect(parseRetryAfter(' 0.25 ', { now })).toBe(250);
    expect(parseRetryAfter('0', { now })).toBe(0);
  });

  it('reads an HTTP date as the time until it, 0 once past', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', { now })).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', { now })).toBe(0);
    // A zone offset (a sign inside the value, not in front of it) is still a date.
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 +0000', { now })).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 13:00:30 +0100', { now })).toBe(30_000);
  });

  it('is undefined for nothing, blanks, negatives and garbage', () => {
    for (const value of [
      null,
      undefined,
      '',
      '   ',
      '-5',
      '-0.5',
      'soon',
      '1e3',
      '0x10',
      '+3',
      'Sun, 99 Foo',
      '2026/03/01 12:00:30',
      '2026-03-01',
    ])
      expect(parseRetryAfter(value, { now })).toBeUndefined();
  });

  it('caps a long wait at a day, or at maxMs', () => {
    expect(parseRetryAfter('999999999', { now })).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('Sun, 01 Mar 2027 12:00:00 GMT', { now })).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('120', { now, maxMs: 60_000 })).toBe(60_000);
  });

  it('any delta-seconds reads back as its ms, capped', () => {
    fc.assert(
      fc.property(fc.nat({ max: 10 ** 9 }), fc.nat({ max: 999 }), (seconds, millis) => {
        const header = `${seconds}.${String(millis).padStart(3, '0')}`;
        expect(parseRetryAfter(header, { now })).toBe(Math.min(MAX_RETRY_AFTER_MS, seconds * 1000 + millis));
        expect(parseRetryAfter(String(seconds), { now })).toBe(Math.min(MAX_RETRY_AFTER_MS, seconds * 1000));
      }),
    );
  });

  it('any HTTP date reads as the whole seconds until it, never negative, capped', () => {
    fc.assert(
      fc.property(fc.integer({ min: -10_000_000, max: 200_000 }), (offsetSeconds) => {
        const header = new Date(now + offsetSeconds * 1000).toUTCString();
        expect(parseRetryAfter(header, { now })).toBe(
          Math.min(MAX_RETRY_AFTER_MS, Math.max(0, offsetSeconds * 1000)),
        );
      }),
    );
  });

  it('any other string is undefined or a wait between 0 and the cap, never NaN', () => {
    fc.assert(
      fc.property(fc.string(), (value) => {
        const ms = parseRetryAfter(value, { now });
        if (ms !== undefined) {
          expect(Number.isInteger(ms)).toBe(true);
          expect(ms).toBeGreaterThanOrEqual(0);
          expect(ms).toBeLessThanOrEqual(MAX_RETRY_AFTER_MS);
        }
        if (/^\s*-/.test(value)) expect(ms).toBeUndefined();
      }),
    );
  });
});
