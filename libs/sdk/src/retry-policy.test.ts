import { outcomeOf, retryDelayMs } from './retry-policy';

const now = Date.parse('2026-03-01T12:00:00Z');
const answer = (status: number, body: unknown = null, retryAfter: string | null = null) => ({
  status,
  body,
  retryAfter,
});

describe('outcomeOf', () => {
  it('treats 2xx as sent (202 hosted, 200 static)', () => {
    expect(outcomeOf(answer(202), now)).toEqual({ kind: 'sent' });
    expect(outcomeOf(answer(200), now)).toEqual({ kind: 'sent' });
  });

  it('retries network failures, 408, 429 and 5xx', () => {
    expect(outcomeOf(null, now)).toEqual({ kind: 'retry', reason: 'network error' });
    for (const status of [408, 429, 500, 502, 503, 504])
      expect(outcomeOf(answer(status), now).kind).toBe('retry');
  });

  it('drops on the other 4xx, naming the host error', () => {
    expect(outcomeOf(answer(401, { ok: false, error: 'invalid_write_key' }), now)).toEqual({
      kind: 'drop',
      reason: '401 invalid_write_key',
    });
    for (const status of [400, 403, 404, 413]) expect(outcomeOf(answer(status), now).kind).toBe('drop');
  });

  it('reads retryAfter from the body, else the Retry-After header in seconds or as a date', () => {
    expect(outcomeOf(answer(429, { error: 'rate_limit_exceeded', retryAfter: 2 }, '60'), now)).toEqual({
      kind: 'retry',
      reason: '429 rate_limit_exceeded',
      afterMs: 2000,
    });
    expect(outcomeOf(answer(503, null, '7'), now)).toMatchObject({ afterMs: 7000 });
    expect(outcomeOf(answer(503, null, new Date(now + 30_000).toUTCString()), now)).toMatchObject({
      afterMs: 30_000,
    });
    expect(outcomeOf(answer(503, null, 'soon'), now)).toEqual({ kind: 'retry', reason: '503' });
  });

  it('caps a server delay at a day', () => {
    expect(outcomeOf(answer(429, { retryAfter: 10 * 86400 }), now)).toMatchObject({ afterMs: 86_400_000 });
  });
});

describe('retryDelayMs', () => {
  it('doubles from one second up to a minute, with half of it random', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, undefined, 0))).toEqual([
      500, 1000, 2000, 4000,
    ]);
    expect([1, 2, 3, 4].map((attempt) => retryDelayMs(attempt, undefined, 0.999999))).toEqual([
      1000, 2000, 4000, 8000,
    ]);
    expect(retryDelayMs(30, undefined, 0)).toBe(30_000);
    expect(retryDelayMs(30, undefined, 0.999999)).toBe(60_000);
  });

  it('waits what the server asked, spread by up to a fifth more (at most 30 s), never less', () => {
    expect(retryDelayMs(1, 5000, 0)).toBe(5000);
    expect(retryDelayMs(1, 5000, 0.999999)).toBe(6000);
    expect(retryDelayMs(6, 1000, 0.5)).toBe(1100);
    expect(retryDelayMs(1, 3_600_000, 0.999999)).toBe(3_630_000);
    expect(retryDelayMs(1, 0, 0.5)).toBe(0);
  });
});
