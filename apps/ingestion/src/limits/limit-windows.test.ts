import {
  ALLOWED,
  AUTH_ATTEMPTS_DENIED,
  authAttemptDecision,
  authAttemptWindow,
  effectiveLimits,
  LocalWindows,
  secondsUntilUtcMidnight,
  sharedTakeDecision,
  sharedWindowKeys,
} from './limit-windows';

// The limits' arithmetic with the clock given: the stores that count (Redis, this process's
// memory) are exercised in limits.test.ts and local-windows.test.ts.

const NOON = Date.UTC(2026, 2, 1, 12, 0, 0, 0);

describe('sharedWindowKeys', () => {
  it('names the write key (as the hash tag), its second and its UTC day', () => {
    expect(sharedWindowKeys('wk_1', NOON + 999)).toEqual([
      `rl:s:{wk_1}:${NOON / 1000}`,
      'rl:d:{wk_1}:2026-03-01',
    ]);
    expect(sharedWindowKeys('wk_1', NOON + 1000)).toEqual([
      `rl:s:{wk_1}:${NOON / 1000 + 1}`,
      'rl:d:{wk_1}:2026-03-01',
    ]);
  });

  it('starts a new day at UTC midnight', () => {
    const midnight = Date.UTC(2026, 2, 2);
    expect(sharedWindowKeys('wk_1', midnight - 1)).toEqual([
      `rl:s:{wk_1}:${midnight / 1000 - 1}`,
      'rl:d:{wk_1}:2026-03-01',
    ]);
    expect(sharedWindowKeys('wk_1', midnight)).toEqual([
      `rl:s:{wk_1}:${midnight / 1000}`,
      'rl:d:{wk_1}:2026-03-02',
    ]);
  });

  it('gives two write keys different counters in the same second', () => {
    const [a, b] = [sharedWindowKeys('wk_a', NOON), sharedWindowKeys('wk_b', NOON)];
    expect(a).toEqual([`rl:s:{wk_a}:${NOON / 1000}`, 'rl:d:{wk_a}:2026-03-01']);
    expect(b).toEqual([`rl:s:{wk_b}:${NOON / 1000}`, 'rl:d:{wk_b}:2026-03-01']);
  });
});

describe('effectiveLimits', () => {
  const defaults = { eventsPerSecond: 100, eventsPerDay: 100_000 };

  it('takes the defaults without overrides', () => {
    expect(effectiveLimits(defaults)).toEqual({ eventsPerSecond: 100, eventsPerDay: 100_000 });
    expect(effectiveLimits(defaults, {})).toEqual({ eventsPerSecond: 100, eventsPerDay: 100_000 });
  });

  it('takes each override over its default and keeps the other', () => {
    expect(effectiveLimits(defaults, { eventsPerSecond: 5 })).toEqual({
      eventsPerSecond: 5,
      eventsPerDay: 100_000,
    });
    expect(effectiveLimits(defaults, { eventsPerDay: 7 })).toEqual({ eventsPerSecond: 100, eventsPerDay: 7 });
    expect(effectiveLimits(defaults, { eventsPerSecond: 1, eventsPerDay: 2 })).toEqual({
      eventsPerSecond: 1,
      eventsPerDay: 2,
    });
    // The defaults are not changed by a key's overrides.
    expect(defaults).toEqual({ eventsPerSecond: 100, eventsPerDay: 100_000 });
  });
});

describe('secondsUntilUtcMidnight', () => {
  it('counts whole seconds to the next UTC midnight, rounding up', () => {
    expect(secondsUntilUtcMidnight(NOON)).toBe(12 * 3600);
    expect(secondsUntilUtcMidnight(NOON + 1)).toBe(12 * 3600);
    expect(secondsUntilUtcMidnight(NOON + 999)).toBe(12 * 3600);
    expect(secondsUntilUtcMidnight(NOON + 1000)).toBe(12 * 3600 - 1);
    expect(secondsUntilUtcMidnight(Date.UTC(2026, 2, 1))).toBe(24 * 3600);
  });

  it('is at least one second, even in the day’s last millisecond', () => {
    expect(secondsUntilUtcMidnight(Date.UTC(2026, 2, 2) - 1)).toBe(1);
    expect(secondsUntilUtcMidnight(Date.UTC(2026, 2, 2) - 1001)).toBe(2);
  });

  it('crosses months and years', () => {
    expect(secondsUntilUtcMidnight(Date.UTC(2026, 1, 28, 23, 0, 0))).toBe(3600);
    expect(secondsUntilUtcMidnight(Date.UTC(2026, 11, 31, 23, 59, 0))).toBe(60);
    expect(secondsUntilUtcMidnight(Date.UTC(2028, 1, 29, 0, 0, 30))).toBe(24 * 3600 - 30);
  });
});

describe('sharedTakeDecision', () => {
  it('allows on 0, telling whether the key checked alongside exists only when one was checked', () => {
    expect(sharedTakeDecision(0, NOON, false)).toEqual({ allowed: true });
    expect(sharedTakeDecision(0, NOON, true)).toEqual({ allowed: true, exists: false });
  });

  it('allows on 3, the key checked alongside existing', () => {
    expect(sharedTakeDecision(3, NOON, true)).toEqual({ allowed: true, exists: true });
  });

  it('refuses on 1 for a second', () => {
    expect(sharedTakeDecision(1, NOON, true)).toEqual({ allowed: false, limitType: 'second', retryAfter: 1 });
    expect(sharedTakeDecision(1, NOON, false)).toEqual({
      allowed: false,
      limitType: 'second',
      retryAfter: 1,
    });
  });

  it('refuses on 2 until the next UTC midnight', () => {
    expect(sharedTakeDecision(2, NOON, false)).toEqual({
      allowed: false,
      limitType: 'day',
      retryAfter: 43_200,
    });
    expect(sharedTakeDecision(2, Date.UTC(2026, 2, 1, 23, 59, 59, 500), true)).toEqual({
      allowed: false,
      limitType: 'day',
      retryAfter: 1,
    });
  });
});

describe('authAttemptWindow', () => {
  it('counts an IPv4 client by its address, per minute', () => {
    expect(authAttemptWindow('198.51.100.7', NOON + 59_999)).toEqual({
      ip: '198.51.100.7',
      minute: NOON / 60_000,
      key: `rl:auth:198.51.100.7:${NOON / 60_000}`,
    });
    expect(authAttemptWindow('198.51.100.7', NOON + 60_000)).toEqual({
      ip: '198.51.100.7',
      minute: NOON / 60_000 + 1,
      key: `rl:auth:198.51.100.7:${NOON / 60_000 + 1}`,
    });
  });

  it('counts an IPv6 client by its /64', () => {
    const a = authAttemptWindow('2001:db8:1:2:aaaa::1', NOON);
    const b = authAttemptWindow('2001:db8:1:2:bbbb::2', NOON);
    expect(a).toEqual({
      ip: '2001:db8:1:2::/64',
      minute: NOON / 60_000,
      key: `rl:auth:2001:db8:1:2::/64:${NOON / 60_000}`,
    });
    expect(b).toEqual(a);
  });
});

describe('authAttemptDecision', () => {
  it('allows up to the per-minute limit and refuses past it for a minute', () => {
    expect(authAttemptDecision(1, 2)).toEqual({ allowed: true });
    expect(authAttemptDecision(2, 2)).toEqual({ allowed: true });
    expect(authAttemptDecision(3, 2)).toEqual({
      allowed: false,
      limitType: 'auth_resolution',
      retryAfter: 60,
    });
    expect(AUTH_ATTEMPTS_DENIED).toEqual({ allowed: false, limitType: 'auth_resolution', retryAfter: 60 });
    expect(ALLOWED).toEqual({ allowed: true });
  });
});

describe('LocalWindows', () => {
  it('counts amounts per key within a window, up to the limit inclusive', () => {
    const windows = new LocalWindows();
    expect(windows.take('a', 3, 5, 7)).toBe(true);
    expect(windows.take('a', 2, 5, 7)).toBe(true);
    expect(windows.take('a', 1, 5, 7)).toBe(false);
    expect(windows.take('b', 5, 5, 7)).toBe(true);
  });

  it('starts every key from zero in a new window', () => {
    const windows = new LocalWindows();
    expect(windows.take('a', 5, 5, 7)).toBe(true);
    expect(windows.take('a', 1, 5, 8)).toBe(true);
    expect(windows.take('a', 4, 5, 8)).toBe(true);
    expect(windows.take('a', 1, 5, 8)).toBe(false);
  });

  it('takes a first window numbered below zero', () => {
    const windows = new LocalWindows();
    expect(windows.take('a', 2, 2, -5)).toBe(true);
    expect(windows.take('a', 1, 2, -5)).toBe(false);
  });
});
