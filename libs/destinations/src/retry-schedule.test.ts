import {
  attemptAfter,
  deadLetterReason,
  defaultRetryPolicy,
  reasonCategory,
  retryDelayMs,
  shouldRetry,
} from './retry-schedule';

describe('retryDelayMs', () => {
  const policy = { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 10_000 };

  it('doubles per attempt with jitter between half and all of the step, capped, and never under Retry-After', () => {
    expect(retryDelayMs(policy, 1, 0, () => 1)).toBe(1000);
    expect(retryDelayMs(policy, 1, 0, () => 0)).toBe(500);
    expect(retryDelayMs(policy, 2, 0, () => 0.5)).toBe(1500);
    expect(retryDelayMs(policy, 3, 0, () => 1)).toBe(4000);
    expect(retryDelayMs(policy, 4, 0, () => 0)).toBe(4000);
    expect(retryDelayMs(policy, 10, 0, () => 1)).toBe(10_000);
    expect(retryDelayMs(policy, 10, 0, () => 0)).toBe(5000);
    expect(retryDelayMs(policy, 1, 30_000, () => 1)).toBe(30_000);
    expect(retryDelayMs(policy, 3, 3000, () => 1)).toBe(4000);
  });

  it('rounds to whole milliseconds and treats attempts before the first as the first', () => {
    expect(retryDelayMs({ maxAttempts: 3, baseDelayMs: 3, maxDelayMs: 100 }, 1, 0, () => 0)).toBe(2);
    expect(retryDelayMs(policy, 0, 0, () => 1)).toBe(1000);
    expect(retryDelayMs(policy, -4, 0, () => 1)).toBe(1000);
  });

  it('defaults to no Retry-After and Math.random', () => {
    const delays = Array.from({ length: 50 }, () => retryDelayMs(policy, 2));
    expect(delays.filter((d) => d < 1000 || d > 2000)).toEqual([]);
  });

  it('waits 2 s, then doubling up to 10 minutes, over 6 attempts by default', () => {
    expect(defaultRetryPolicy).toEqual({ maxAttempts: 6, baseDelayMs: 2000, maxDelayMs: 600_000 });
    expect(
      [1, 2, 3, 4, 5, 10].map((attempt) => retryDelayMs(defaultRetryPolicy, attempt, 0, () => 1)),
    ).toEqual([2000, 4000, 8000, 16_000, 32_000, 600_000]);
  });
});

describe('shouldRetry and attemptAfter', () => {
  const policy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 1 };

  it('retries a retryable failure while attempts remain; never a permanent one', () => {
    expect([1, 2, 3, 4].map((attempt) => shouldRetry(true, attempt, policy))).toEqual([
      true,
      true,
      false,
      false,
    ]);
    expect([1, 2].map((attempt) => shouldRetry(false, attempt, policy))).toEqual([false, false]);
  });

  it('counts the attempt from the retry record’s header', () => {
    expect(attemptAfter(undefined)).toBe(1);
    expect(attemptAfter('0')).toBe(1);
    expect(attemptAfter('2')).toBe(3);
  });
});

describe('reasonCategory and deadLetterReason', () => {
  it('labels by the reason’s leading code, never by tenant text', () => {
    expect(
      [
        'http_400: bad request',
        'unstorable_event: x',
        'invalid_config',
        'http_4000: x',
        'Http_400',
        'user@example.com: x',
        '',
        `a${'b'.repeat(39)}: x`,
        `a${'b'.repeat(40)}: x`,
        '9lives: x',
        'data error: x',
      ].map(reasonCategory),
    ).toEqual([
      'http_400',
      'unstorable_event',
      'invalid_config',
      'other',
      'other',
      'other',
      'other',
      `a${'b'.repeat(39)}`,
      'other',
      'other',
      'other',
    ]);
  });

  it('a retryable failure dead-lettered has run out of attempts', () => {
    expect(deadLetterReason(true, 'http_503: x')).toBe('attempts_exhausted');
    expect(deadLetterReason(false, 'http_400: x')).toBe('http_400');
  });
});
