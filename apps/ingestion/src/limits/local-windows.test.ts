import { AuthAttemptLimiter, LocalBackstop } from './rate-limits';

// The per-process fixed windows, with the clock injected: no test here waits for a second or a
// minute to pass. The shared (Redis) limits are tested against a real Redis in limits.test.ts.

describe('LocalBackstop', () => {
  it('takes up to the per-second limit in one second, counting each batch’s events', () => {
    let now = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
    const backstop = new LocalBackstop(10, () => now);
    expect(backstop.take('wk', 4)).toEqual({ allowed: true });
    expect(backstop.take('wk', 6)).toEqual({ allowed: true });
    expect(backstop.take('wk', 1)).toEqual({ allowed: false, limitType: 'second', retryAfter: 1 });
    // The last millisecond of the same second.
    now += 999;
    expect(backstop.take('wk', 1)).toEqual({ allowed: false, limitType: 'second', retryAfter: 1 });
    // The next second starts from zero.
    now += 1;
    expect(backstop.take('wk', 10)).toEqual({ allowed: true });
  });

  it('does not count a refused batch', () => {
    const now = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
    const backstop = new LocalBackstop(10, () => now);
    expect(backstop.take('wk', 8)).toEqual({ allowed: true });
    expect(backstop.take('wk', 3)).toEqual({ allowed: false, limitType: 'second', retryAfter: 1 });
    expect(backstop.take('wk', 2)).toEqual({ allowed: true });
  });

  it('counts each write key on its own', () => {
    const now = Date.UTC(2026, 2, 1, 12, 0, 0, 500);
    const backstop = new LocalBackstop(5, () => now);
    expect(backstop.take('a', 5)).toEqual({ allowed: true });
    expect(backstop.take('b', 5)).toEqual({ allowed: true });
    expect(backstop.take('a', 1)).toMatchObject({ allowed: false });
  });

  it('refuses a single batch larger than the limit', () => {
    const backstop = new LocalBackstop(5, () => 0);
    expect(backstop.take('wk', 6)).toEqual({ allowed: false, limitType: 'second', retryAfter: 1 });
  });
});

describe('AuthAttemptLimiter without Redis', () => {
  it('allows the per-minute attempts of an address, then refuses until the next minute', async () => {
    let now = Date.UTC(2026, 2, 1, 12, 0, 0, 0);
    const limiter = new AuthAttemptLimiter(null, 2, () => now);
    const denied = { allowed: false, limitType: 'auth_resolution', retryAfter: 60 };
    expect(await limiter.take('198.51.100.1')).toEqual({ allowed: true });
    expect(await limiter.take('198.51.100.1')).toEqual({ allowed: true });
    expect(await limiter.take('198.51.100.1')).toEqual(denied);
    expect(await limiter.take('198.51.100.2')).toEqual({ allowed: true });
    now += 59_999;
    expect(await limiter.take('198.51.100.1')).toEqual(denied);
    now += 1;
    expect(await limiter.take('198.51.100.1')).toEqual({ allowed: true });
  });
});
