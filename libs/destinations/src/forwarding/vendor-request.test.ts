import {
  abortReason,
  basicAuth,
  callVendor,
  describeAnswer,
  failureOfStatus,
  isRequestFailure,
  statusClassOf,
  type VendorRequest,
  type VendorResponse,
} from './vendor-request';

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
    // The documented pause is for 429 alone; a 503 without Retry-After leaves the backoff to us.
    expect(failureOfStatus(response(503), { defaultRetryAfterMs: 30_000 }).retryAfterMs).toBeUndefined();
    expect(failureOfStatus(response(503), { defaultRetryAfterMs: 30_000 })).not.toHaveProperty(
      'retryAfterMs',
    );
    expect(failureOfStatus(response(400), { retryAfterFallback: () => 5 })).not.toHaveProperty(
      'retryAfterMs',
    );
  });

  it('draws the line between permanent and retryable at 499 and 500', () => {
    expect(
      [407, 408, 409, 428, 429, 430, 499, 500].map((s) => failureOfStatus(response(s)).retryable),
    ).toEqual([false, true, false, false, true, false, false, true]);
    expect(failureOfStatus(response(400))).not.toHaveProperty('fatal');
  });
});

describe('statusClassOf', () => {
  it('is the hundreds of an HTTP status, and network for what is not one', () => {
    expect([100, 199, 200, 299, 301, 404, 499, 500, 599].map(statusClassOf)).toEqual([
      '1xx',
      '1xx',
      '2xx',
      '2xx',
      '3xx',
      '4xx',
      '4xx',
      '5xx',
      '5xx',
    ]);
    expect([0, 99, 600, 999].map(statusClassOf)).toEqual(['network', 'network', 'network', 'network']);
  });
});

describe('basicAuth', () => {
  it('encodes user and password, keeping the colon of an empty password', () => {
    expect(basicAuth('key', '')).toBe(`Basic ${Buffer.from('key:').toString('base64')}`);
    expect(basicAuth('user', 'pa:ss')).toBe('Basic dXNlcjpwYTpzcw==');
  });
});

describe('describeAnswer', () => {
  it('takes error, then message, then title of a JSON object; else the trimmed text', () => {
    expect(describeAnswer(response(400, {}, '{"error":"e","message":"m","title":"t"}'))).toBe('e');
    expect(describeAnswer(response(400, {}, '{"error":"","message":"m","title":"t"}'))).toBe('m');
    expect(describeAnswer(response(400, {}, '{"error":3,"title":"t"}'))).toBe('t');
    expect(describeAnswer(response(400, {}, '{"code":3}'))).toBe('{"code":3}');
    expect(describeAnswer(response(400, {}, '["error"]'))).toBe('["error"]');
    expect(describeAnswer(response(400, {}, 'null'))).toBe('null');
    expect(describeAnswer(response(400, {}, '  Bad Gateway \n'))).toBe('Bad Gateway');
    expect(describeAnswer(response(400, {}, '   '))).toBe('no body');
    expect(describeAnswer(response(400, {}, JSON.stringify({ message: 'x'.repeat(400) })))).toBe(
      'x'.repeat(300),
    );
  });
});

describe('abortReason and isRequestFailure', () => {
  it('tells a time budget from a caller’s abort', () => {
    const budget = new AbortController();
    budget.abort(new DOMException('late', 'TimeoutError'));
    expect(abortReason(budget.signal)).toBe('time_budget_exceeded: the send outlasted its time budget');
    const caller = new AbortController();
    caller.abort();
    expect(abortReason(caller.signal)).toBe('aborted');
    expect(abortReason(new AbortController().signal)).toBe('aborted');
  });

  it('tells a failure from an answer', () => {
    expect(isRequestFailure({ reason: 'x', retryable: true })).toBe(true);
    expect(isRequestFailure(response(200))).toBe(false);
  });
});

describe('callVendor (in-process fetch)', () => {
  const request: VendorRequest = {
    method: 'POST',
    url: 'https://vendor.test/in',
    headers: { a: 'b' },
    body: '{"x":1}',
  };
  const answering =
    (
      body: ConstructorParameters<typeof Response>[0],
      init: ResponseInit = {},
      seen: RequestInit[] = [],
    ): typeof fetch =>
    (_url, options) => {
      seen.push(options ?? {});
      return Promise.resolve(new Response(body, init));
    };

  it('sends the request and reads the answer, its JSON when there is some', async () => {
    const seen: RequestInit[] = [];
    const classes: string[] = [];
    const answer = await callVendor(
      {
        fetch: answering('{"ok":true}', { status: 201, headers: { 'x-h': 'v' } }, seen),
        timeoutMs: 5000,
        onResponse: (c) => classes.push(c),
      },
      request,
    );
    expect(isRequestFailure(answer)).toBe(false);
    const { status, text, json, headers } = answer as VendorResponse;
    expect([status, text, json, headers.get('x-h')]).toEqual([201, '{"ok":true}', { ok: true }, 'v']);
    expect(classes).toEqual(['2xx']);
    expect(seen.map((s) => [s.method, s.headers, s.body, s.redirect])).toEqual([
      ['POST', { a: 'b' }, '{"x":1}', 'follow'],
    ]);
  });

  it('sends no body with a GET, and does not follow redirects when told', async () => {
    const seen: RequestInit[] = [];
    await callVendor(
      { fetch: answering('', { status: 204 }, seen), timeoutMs: 5000, redirect: 'manual' },
      { ...request, method: 'GET' },
    );
    expect(seen.map((s) => ['body' in s, s.redirect])).toEqual([[false, 'manual']]);
  });

  it('leaves json undefined for an empty body or text that is not JSON', async () => {
    const empty = (await callVendor(
      { fetch: answering(null, { status: 500 }), timeoutMs: 5000 },
      request,
    )) as VendorResponse;
    expect([empty.text, empty.json]).toEqual(['', undefined]);
    const html = (await callVendor(
      { fetch: answering('<html>', { status: 502 }), timeoutMs: 5000 },
      request,
    )) as VendorResponse;
    expect([html.text, html.json]).toEqual(['<html>', undefined]);
  });

  it('reads at most 64 KiB of an answer', async () => {
    const big = 'a'.repeat(40 * 1024);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 4; i += 1) controller.enqueue(new TextEncoder().encode(big));
        controller.close();
      },
    });
    const answer = (await callVendor(
      { fetch: answering(stream), timeoutMs: 5000 },
      request,
    )) as VendorResponse;
    expect(answer.text).toHaveLength(64 * 1024);
    const exact = (await callVendor(
      { fetch: answering('b'.repeat(64 * 1024)), timeoutMs: 5000 },
      request,
    )) as VendorResponse;
    expect(exact.text).toHaveLength(64 * 1024);
  });

  it('stops reading an answer that never ends', async () => {
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.enqueue(new Uint8Array(10_000).fill(97));
      },
    });
    const answer = (await callVendor(
      { fetch: answering(endless), timeoutMs: 5000 },
      request,
    )) as VendorResponse;
    expect(answer.text).toHaveLength(64 * 1024);
  });

  it('turns a network error into a retryable failure, except a refused address', async () => {
    const throwing =
      (code: string): typeof fetch =>
      () =>
        Promise.reject(
          Object.assign(new TypeError('fetch failed'), { cause: { code, message: `${code} at x` } }),
        );
    const classes: string[] = [];
    expect(
      await callVendor(
        { fetch: throwing('ECONNREFUSED'), timeoutMs: 5000, onResponse: (c) => classes.push(c) },
        request,
      ),
    ).toEqual({
      reason: 'connection_refused',
      detail: 'ECONNREFUSED: ECONNREFUSED at x',
      retryable: true,
    });
    expect(await callVendor({ fetch: throwing('EGRESS_REFUSED'), timeoutMs: 5000 }, request)).toEqual({
      reason: 'address_refused',
      detail: 'EGRESS_REFUSED: EGRESS_REFUSED at x',
      retryable: false,
    });
    expect(classes).toEqual(['network']);
  });

  it('a body cut off after the answer is counted once, as the answer’s class', async () => {
    const classes: string[] = [];
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        controller.error(Object.assign(new Error('terminated'), { cause: { code: 'UND_ERR_SOCKET' } }));
      },
    });
    const failure = await callVendor(
      { fetch: answering(stream, { status: 200 }), timeoutMs: 5000, onResponse: (c) => classes.push(c) },
      request,
    );
    expect(failure).toMatchObject({ reason: 'connection_reset', retryable: true });
    expect(classes).toEqual(['2xx']);
  });

  const waitingForAbort: typeof fetch = (_url, options) =>
    new Promise((_, reject) =>
      options?.signal?.addEventListener('abort', () => reject(options.signal?.reason)),
    );

  it('gives up after timeoutMs, retryably', async () => {
    expect(await callVendor({ fetch: waitingForAbort, timeoutMs: 20 }, request)).toEqual({
      reason: 'timeout: no answer within 20 ms',
      retryable: true,
    });
  });

  it('stops when the caller aborts, saying why', async () => {
    const caller = new AbortController();
    const pending = callVendor({ fetch: waitingForAbort, timeoutMs: 60_000, signal: caller.signal }, request);
    caller.abort(new DOMException('budget', 'TimeoutError'));
    expect(await pending).toEqual({
      reason: 'time_budget_exceeded: the send outlasted its time budget',
      retryable: true,
    });
  });
});
