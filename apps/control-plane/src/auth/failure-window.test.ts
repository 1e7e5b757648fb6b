import {
  API_KEY_FAILURES,
  FAILURE_WINDOW_MS,
  failureKeyOf,
  failureWindowOf,
  LocalFailureCounts,
  OPERATOR_TOKEN_FAILURES,
  secondsLeftInWindow,
} from './failure-window';

// The arithmetic of the failed-key limit. Pure: api-key-failures.test.ts covers the limit
// over real PostgreSQL and Redis.

describe('failure windows', () => {
  it('are whole minutes since the epoch', () => {
    expect(FAILURE_WINDOW_MS).toBe(60_000);
    expect([0, 59_999, 60_000, 119_999, 120_000, 1_700_000_030_000].map(failureWindowOf)).toEqual([
      0, 0, 1, 1, 2, 28_333_333,
    ]);
  });

  it('retry after the whole seconds left in the window, at least 1', () => {
    expect(secondsLeftInWindow(0)).toBe(60);
    expect(secondsLeftInWindow(1)).toBe(60);
    expect(secondsLeftInWindow(999)).toBe(60);
    expect(secondsLeftInWindow(1_000)).toBe(59);
    expect(secondsLeftInWindow(58_001)).toBe(2);
    expect(secondsLeftInWindow(59_000)).toBe(1);
    expect(secondsLeftInWindow(59_999)).toBe(1);
    expect(secondsLeftInWindow(60_000)).toBe(60);
    expect(secondsLeftInWindow(125_500)).toBe(55);
  });

  it('count an address per window, an IPv6 address by its /64', () => {
    expect(failureKeyOf('192.0.2.7', 5)).toBe('api-key-failures:192.0.2.7:5');
    expect(failureKeyOf('2001:db8:1:2:aaaa::1', 7)).toBe(failureKeyOf('2001:db8:1:2:bbbb::9', 7));
    expect(failureKeyOf('2001:db8:1:2::1', 7)).not.toBe(failureKeyOf('2001:db8:1:3::1', 7));
    expect(failureKeyOf('192.0.2.7', 5)).not.toBe(failureKeyOf('192.0.2.8', 5));
  });

  it('count operator-token failures apart from API-key failures, each under its own name', () => {
    expect(failureKeyOf('192.0.2.7', 5, API_KEY_FAILURES)).toBe('api-key-failures:192.0.2.7:5');
    expect(failureKeyOf('192.0.2.7', 5, OPERATOR_TOKEN_FAILURES)).toBe('operator-token-failures:192.0.2.7:5');
    expect(failureKeyOf('2001:db8:1:2:aaaa::1', 7, OPERATOR_TOKEN_FAILURES)).toBe(
      failureKeyOf('2001:db8:1:2:bbbb::9', 7, OPERATOR_TOKEN_FAILURES),
    );
    // The names its logs give a counter falling back to memory and back to Redis.
    expect([API_KEY_FAILURES.name, OPERATOR_TOKEN_FAILURES.name]).toEqual([
      'API key failure limit',
      'operator token failure limit',
    ]);
  });
});

describe('LocalFailureCounts', () => {
  it('counts each key in the current window and forgets every key when the window moves on', () => {
    const counts = new LocalFailureCounts();
    expect(counts.count(3, 'a')).toBe(0);
    counts.add(3, 'a');
    counts.add(3, 'a');
    counts.add(3, 'b');
    expect([counts.count(3, 'a'), counts.count(3, 'b'), counts.count(3, 'c')]).toEqual([2, 1, 0]);
    expect(counts.count(4, 'a')).toBe(0);
    counts.add(4, 'b');
    expect([counts.count(4, 'a'), counts.count(4, 'b')]).toEqual([0, 1]);
    // An earlier window's counts are gone, not resumed.
    expect(counts.count(3, 'a')).toBe(0);
  });

  it('starts in no window: window 0 and a negative clock count from nothing', () => {
    const counts = new LocalFailureCounts();
    counts.add(0, 'a');
    expect(counts.count(0, 'a')).toBe(1);
    const fresh = new LocalFailureCounts();
    expect(fresh.count(-1, 'a')).toBe(0);
    fresh.add(-1, 'a');
    expect(fresh.count(-1, 'a')).toBe(1);
  });
});
