import { readiness, sharedCheck } from './probes';

describe('readiness', () => {
  it('is 200 naming every check up, or 503 naming the failing ones; a check that hangs fails at the bound', async () => {
    expect(await readiness({ a: async () => 'fine' })).toEqual({
      status: 200,
      body: { ok: true, checks: { a: 'up' } },
    });
    const failures: string[] = [];
    // `hangs` never settles, so the answer arriving at all is the bound at work.
    const answer = await readiness(
      {
        up: async () => undefined,
        refused: async () => {
          throw new Error('ECONNREFUSED');
        },
        hangs: () => new Promise(() => undefined),
      },
      { timeoutMs: 200, onFailure: (name, error) => failures.push(`${name}: ${(error as Error).message}`) },
    );
    expect(answer).toEqual({
      status: 503,
      body: {
        ok: false,
        checks: { up: 'up', refused: 'down', hangs: 'down' },
        failing: ['refused', 'hangs'],
      },
    });
    expect(failures.sort()).toEqual(['hangs: no answer within 200 ms', 'refused: ECONNREFUSED']);
  });

  it('needs no failure callback, and leaves no timer behind once the checks answered', async () => {
    jest.useFakeTimers();
    try {
      const answer = await readiness({
        up: async () => undefined,
        down: async () => {
          throw new Error('ECONNREFUSED');
        },
      });
      expect(answer).toEqual({
        status: 503,
        body: { ok: false, checks: { up: 'up', down: 'down' }, failing: ['down'] },
      });
      // Each check's timeout timer is cleared as soon as the check settles.
      expect(jest.getTimerCount()).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});

describe('sharedCheck', () => {
  it('runs the check once for the probes within cacheMs, then again', async () => {
    let runs = 0;
    let fail = false;
    const check = sharedCheck(async () => {
      runs += 1;
      if (fail) throw new Error('down');
    }, 60_000);
    await Promise.all([check(), check(), check()]);
    fail = true;
    await check(); // still the kept success
    expect(runs).toBe(1);
    const fresh = sharedCheck(async () => {
      runs += 1;
    }, 0);
    await fresh();
    await fresh();
    expect(runs).toBe(3);
  });
});
