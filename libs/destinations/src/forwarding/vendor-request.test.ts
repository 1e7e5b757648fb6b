import { failureOfStatus, parseRetryAfter, type VendorResponse } from './vendor-request';

const response = (status: number, headers: Record<string, string> = {}, body = ''): VendorResponse => {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, headers: new Headers(headers), text: body, json };
};

describe('parseRetryAfter', () => {
  const now = new Date('2026-03-01T12:00:00Z');

  it('reads delta-seconds, whole or decimal', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter('2.0', now)).toBe(2000);
    expect(parseRetryAfter('0', now)).toBe(0);
  });

  it('reads an HTTP date as the time until it, never negative', () => {
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
  });

  it('ignores what it cannot read', () => {
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('', now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
  });
});

describe('failureOfStatus', () => {
  it.each([408, 429, 500, 502, 503, 504])('%i is retryable', (status) => {
    expect(failureOfStatus(response(status)).retryable).toBe(true);
  });

  it.each([400, 404, 409, 413, 422])('%i is permanent', (status) => {
    expect(failureOfStatus(response(status))).toMatchObject({ retryable: false, status });
  });

  it('401 and 403 stop the whole send (fatal); a vendor may add statuses', () => {
    expect(failureOfStatus(response(401)).fatal).toBe(true);
    expect(failureOfStatus(response(403)).fatal).toBe(true);
    expect(failureOfStatus(response(404)).fatal).toBeUndefined();
    expect(failureOfStatus(response(404), { fatalStatuses: [404] }).fatal).toBe(true);
  });

  it('gives the tenant the status alone and keeps the vendor’s error body, else its text, for the logs', () => {
    expect(failureOfStatus(response(400, {}, '{"code":400,"error":"Invalid API key"}'))).toMatchObject({
      reason: 'http_400',
      detail: 'Invalid API key',
    });
    expect(failureOfStatus(response(400, {}, '{"message":"Max Input Length Exceeded"}'))).toMatchObject({
      reason: 'http_400',
      detail: 'Max Input Length Exceeded',
    });
    expect(failureOfStatus(response(502, {}, 'Bad Gateway'))).toMatchObject({
      reason: 'http_502',
      detail: 'Bad Gateway',
    });
    expect(failureOfStatus(response(503))).toMatchObject({ reason: 'http_503', detail: 'no body' });
    expect(failureOfStatus(response(500, {}, 'x'.repeat(5000))).detail).toHaveLength(300);
  });

  it('Retry-After first, then a vendor’s fallback, then its documented pause for 429', () => {
    expect(
      failureOfStatus(response(429, { 'Retry-After': '3' }), { defaultRetryAfterMs: 30_000 }).retryAfterMs,
    ).toBe(3000);
    expect(
      failureOfStatus(response(429), { retryAfterFallback: () => 1234, defaultRetryAfterMs: 30_000 })
        .retryAfterMs,
    ).toBe(1234);
    expect(failureOfStatus(response(429), { defaultRetryAfterMs: 30_000 }).retryAfterMs).toBe(30_000);
    expect(failureOfStatus(response(503, { 'Retry-After': '9' })).retryAfterMs).toBe(9000);
    expect(failureOfStatus(response(500)).retryAfterMs).toBeUndefined();
    expect(failureOfStatus(response(400, { 'Retry-After': '9' })).retryAfterMs).toBeUndefined();
  });
});
