import { retryDelayMs } from './retry-backoff';

describe('retryDelayMs', () => {
  const backoff = { retryBaseMs: 30_000, retryMaxMs: 900_000 };

  it('waits the base before the first retry and doubles before each next one', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryDelayMs(attempt, backoff))).toEqual([
      30_000, 60_000, 120_000, 240_000, 480_000,
    ]);
  });

  it('never waits more than the maximum', () => {
    expect(retryDelayMs(6, backoff)).toBe(900_000);
    expect(retryDelayMs(40, backoff)).toBe(900_000);
    // Exactly at the cap: 30 s × 2^5 = 960 s would pass it, 30 s × 2^4 = 480 s does not.
    expect(retryDelayMs(5, { retryBaseMs: 30_000, retryMaxMs: 480_000 })).toBe(480_000);
    expect(retryDelayMs(5, { retryBaseMs: 30_000, retryMaxMs: 480_001 })).toBe(480_000);
  });

  it('treats an attempt below 1 as the first', () => {
    expect(retryDelayMs(0, backoff)).toBe(30_000);
    expect(retryDelayMs(-3, backoff)).toBe(30_000);
  });

  it('retries at once with a zero base', () => {
    expect(retryDelayMs(3, { retryBaseMs: 0, retryMaxMs: 900_000 })).toBe(0);
  });
});
