import { failureOfStatus, type VendorResponse } from './vendor-request';

const response = (status: number, headers: Record<string, string> = {}, body = ''): VendorResponse => {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    json = undefined;
  }
  return { status, headers: new Headers(headers), text: body, json };
};

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
    // Read by the one parser (@pipeline/egress): a date, and garbage that leaves the fallback.
    const inTenSeconds = new Date(Date.now() + 10_000).toUTCString();
    const dated = failureOfStatus(response(503, { 'Retry-After': inTenSeconds })).retryAfterMs!;
    expect(dated).toBeGreaterThan(8_000);
    expect(dated).toBeLessThanOrEqual(10_000);
    expect(
      failureOfStatus(response(429, { 'Retry-After': '-5' }), { defaultRetryAfterMs: 30_000 }).retryAfterMs,
    ).toBe(30_000);
    expect(failureOfStatus(response(429, { 'Retry-After': '9999999' })).retryAfterMs).toBe(86_400_000);
    expect(failureOfStatus(response(400, { 'Retry-After': '9' })).retryAfterMs).toBeUndefined();
  });
});
