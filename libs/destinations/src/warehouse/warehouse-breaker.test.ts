import { WarehouseBreaker } from './warehouse-breaker';

describe('WarehouseBreaker', () => {
  let now = 0;
  const clock = () => now;
  const timings = { baseMs: 1000, maxMs: 5000, probeWaitMs: 300 };
  const unavailable = { kind: 'unavailable' as const, detail: 'ECONNREFUSED' };

  beforeEach(() => (now = 0));

  it('closed: every write goes, nothing to wait for', () => {
    const breaker = new WarehouseBreaker(timings, clock);
    expect(breaker.state).toBe('closed');
    expect(breaker.admit()).toEqual({ go: true, probe: false });
    expect(breaker.admit()).toEqual({ go: true, probe: false });
    expect(breaker.cause).toBeUndefined();
    expect(breaker.retryAfterMs()).toBe(0);
    expect(breaker.succeeded()).toBe(false);
  });

  it('opens on the first failure, then lets one probe through after the cooldown', () => {
    const breaker = new WarehouseBreaker(timings, clock);
    expect(breaker.failed(unavailable)).toBe(true);
    expect(breaker.state).toBe('open');
    expect(breaker.cause).toEqual(unavailable);
    now = 400;
    expect(breaker.admit()).toEqual({ go: false, retryAfterMs: 600 });
    expect(breaker.retryAfterMs()).toBe(600);
    now = 1000;
    expect(breaker.state).toBe('half-open');
    expect(breaker.admit()).toEqual({ go: true, probe: true });
    // While the probe runs the others wait a little, not the whole cooldown.
    expect(breaker.admit()).toEqual({ go: false, retryAfterMs: 300 });
    expect(breaker.retryAfterMs()).toBe(300);
    expect(breaker.succeeded()).toBe(true);
    expect(breaker.state).toBe('closed');
    expect(breaker.cause).toBeUndefined();
    // The probe that closed it holds nobody back any more.
    expect(breaker.retryAfterMs()).toBe(0);
    expect(breaker.admit()).toEqual({ go: true, probe: false });
  });

  it('a probe abandoned without a verdict lets the next write probe at once', () => {
    const breaker = new WarehouseBreaker(timings, clock);
    breaker.failed(unavailable);
    now = 1000;
    expect(breaker.admit()).toEqual({ go: true, probe: true });
    expect(breaker.admit()).toEqual({ go: false, retryAfterMs: 300 });
    breaker.abandonProbe();
    expect(breaker.state).toBe('half-open');
    expect(breaker.retryAfterMs()).toBe(0);
    expect(breaker.admit()).toEqual({ go: true, probe: true });
  });

  it('each failed probe doubles the cooldown, up to the maximum; a misconfiguration replaces the cause', () => {
    const breaker = new WarehouseBreaker(timings, clock);
    const cooldowns: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const opened = breaker.failed(i === 4 ? { kind: 'misconfigured', detail: '28000' } : unavailable);
      expect(opened).toBe(i === 0);
      cooldowns.push(breaker.retryAfterMs());
      now += breaker.retryAfterMs();
      expect(breaker.admit()).toEqual({ go: true, probe: true });
    }
    expect(cooldowns).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect(breaker.cause).toEqual({ kind: 'misconfigured', detail: '28000' });
    breaker.succeeded();
    breaker.failed(unavailable);
    expect(breaker.retryAfterMs()).toBe(1000);
  });

  it('by default waits 2 s after the first failure, doubling to 60 s, and 1 s behind a probe', () => {
    const breaker = new WarehouseBreaker(undefined, clock);
    const cooldowns: number[] = [];
    for (let i = 0; i < 7; i += 1) {
      breaker.failed(unavailable);
      cooldowns.push(breaker.retryAfterMs());
      now += breaker.retryAfterMs();
      expect(breaker.admit()).toEqual({ go: true, probe: true });
    }
    expect(cooldowns).toEqual([2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
    expect(breaker.admit()).toEqual({ go: false, retryAfterMs: 1000 });
  });
});
