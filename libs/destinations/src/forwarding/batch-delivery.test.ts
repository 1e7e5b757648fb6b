import { deliverAll, DeliveryLedger, type Endpoint, type Verdict } from './batch-delivery';
import { DeliveryFailure } from './delivery-failure';
import { InvalidConfig } from './destination-settings';
import type { OutboundEvent } from './outbound-event';
import type { RequestFailure, VendorHttp, VendorResponse } from './vendor-request';

// The ledger against an in-process fetch: which events of a send went, which are retried and
// which are dead-lettered, as each kind of vendor answer says.

const outbound = (messageId: string): OutboundEvent => ({
  event: {
    type: 'track',
    event: 'Order Completed',
    messageId,
    anonymousId: 'a-1',
    timestamp: '2026-03-01T12:00:00Z',
  },
  receipt: { receivedAt: new Date(0), ip: null, userAgent: null },
});
const events = (count: number) => Array.from({ length: count }, (_, i) => outbound(`m${i}`));

/** A vendor answering each request with the next status (200 once they run out); logs the bodies. */
function vendor(statuses: number[] = []) {
  const bodies: string[][] = [];
  const fetch: typeof globalThis.fetch = (_url, init) => {
    bodies.push(JSON.parse(String(init?.body)) as string[]);
    return Promise.resolve(new Response('{}', { status: statuses.shift() ?? 200 }));
  };
  return { bodies, http: { fetch, timeoutMs: 5000 } satisfies VendorHttp };
}

/** Items are the messageIds; a request's body is their JSON array. */
function endpoint<Item = string>(
  verdict: (response: VendorResponse, items: readonly Item[]) => Verdict,
  limits = { maxItems: 10, maxBodyBytes: 10_000 },
): Endpoint<Item> {
  return {
    limits,
    envelopeBytes: 2,
    request: (items) => ({
      method: 'POST',
      url: 'https://vendor.test/batch',
      headers: {},
      body: JSON.stringify(items),
    }),
    verdict,
  };
}
const byStatus = (response: VendorResponse): Verdict =>
  response.status === 200
    ? { kind: 'accepted' }
    : {
        kind: 'failed',
        failure: {
          reason: `http_${response.status}`,
          retryable: response.status >= 500,
          status: response.status,
        },
      };

async function failureOf(run: Promise<unknown>): Promise<DeliveryFailure> {
  try {
    await run;
  } catch (error) {
    if (error instanceof DeliveryFailure) return error;
    throw error;
  }
  throw new Error('the send did not fail');
}
const verdicts = (failure: DeliveryFailure) =>
  failure.undelivered.map((u) => [u.event.event.messageId, u.reason, u.retryable]);

const sendAll = (
  input: readonly OutboundEvent[],
  http: VendorHttp,
  target: Endpoint<string>,
  map: (o: OutboundEvent) => string[] | string = (o) => [o.event.messageId],
) =>
  deliverAll('vendor', input, http, async (ledger) => {
    await ledger.deliver(target, ledger.mapEvents(map));
  });

describe('deliverAll and the delivery ledger', () => {
  it('sends every event in requests within the limits and reports them sent', async () => {
    const { bodies, http } = vendor();
    const outcome = await sendAll(events(5), http, endpoint(byStatus, { maxItems: 2, maxBodyBytes: 10_000 }));
    expect(outcome).toEqual({ sent: 5, requests: 3, skipped: [] });
    expect(bodies).toEqual([['m0', 'm1'], ['m2', 'm3'], ['m4']]);
  });

  it('skips events the vendor has nothing for, and fails alone an event its mapping throws on', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      sendAll(events(3), http, endpoint(byStatus), (o) => {
        if (o.event.messageId === 'm0') return 'alias_not_supported: no aliases';
        if (o.event.messageId === 'm1') throw new Error('bad product');
        return [o.event.messageId];
      }),
    );
    expect(bodies).toEqual([['m2']]);
    expect(verdicts(failure)).toEqual([['m1', 'mapping_failed: bad product', false]]);
    expect([failure.message, failure.retryable, failure.sent, failure.requests]).toEqual([
      'vendor: mapping_failed: bad product',
      false,
      1,
      1,
    ]);
    expect(failure.skipped).toEqual([{ messageId: 'm0', reason: 'alias_not_supported: no aliases' }]);
  });

  it('fails every pending event permanently on invalid config, even one found while mapping', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      sendAll(events(2), http, endpoint(byStatus), () => {
        throw new InvalidConfig('credentials.apiKey is required');
      }),
    );
    expect(bodies).toEqual([]);
    expect(verdicts(failure)).toEqual([
      ['m0', 'invalid_config: credentials.apiKey is required', false],
      ['m1', 'invalid_config: credentials.apiKey is required', false],
    ]);
    expect([failure.message, failure.retryable, failure.requests]).toEqual([
      'vendor: invalid_config: credentials.apiKey is required',
      false,
      0,
    ]);
  });

  it('passes on other errors of the run as they are', async () => {
    const bug = new Error('bug');
    await expect(deliverAll('vendor', events(1), vendor().http, () => Promise.reject(bug))).rejects.toBe(bug);
  });

  it('a retryable failure stops the send: the rest is retried with the vendor’s wait and status', async () => {
    const { bodies, http } = vendor([200, 503]);
    const retryLater = (response: VendorResponse): Verdict =>
      response.status === 200
        ? { kind: 'accepted' }
        : {
            kind: 'failed',
            failure: { reason: 'http_503', detail: 'busy', retryable: true, status: 503, retryAfterMs: 7000 },
          };
    const failure = await failureOf(
      sendAll(events(5), http, endpoint(retryLater, { maxItems: 2, maxBodyBytes: 10_000 })),
    );
    expect(bodies).toEqual([
      ['m0', 'm1'],
      ['m2', 'm3'],
    ]);
    expect(verdicts(failure)).toEqual([
      ['m2', 'http_503', true],
      ['m3', 'http_503', true],
      ['m4', 'http_503', true],
    ]);
    expect([
      failure.message,
      failure.retryable,
      failure.status,
      failure.detail,
      failure.retryAfterMs,
    ]).toEqual(['vendor: http_503', true, 503, 'busy', 7000]);
    expect([failure.sent, failure.requests]).toEqual([2, 2]);
  });

  it('a fatal failure (a wrong key) stops the send without retrying', async () => {
    const { bodies, http } = vendor([401]);
    const fatal = (): Verdict => ({
      kind: 'failed',
      failure: { reason: 'http_401', retryable: false, fatal: true, status: 401 },
    });
    const failure = await failureOf(
      sendAll(events(3), http, endpoint(fatal, { maxItems: 1, maxBodyBytes: 10_000 })),
    );
    expect(bodies).toEqual([['m0']]);
    expect(verdicts(failure)).toEqual([
      ['m0', 'http_401', false],
      ['m1', 'http_401', false],
      ['m2', 'http_401', false],
    ]);
    expect([failure.retryable, failure.status]).toEqual([false, 401]);
  });

  it('a permanent failure fails its request’s events and the send goes on', async () => {
    const { bodies, http } = vendor([400, 200]);
    const failure = await failureOf(
      sendAll(events(3), http, endpoint(byStatus, { maxItems: 2, maxBodyBytes: 10_000 })),
    );
    expect(bodies).toEqual([['m0', 'm1'], ['m2']]);
    expect(verdicts(failure)).toEqual([
      ['m0', 'http_400', false],
      ['m1', 'http_400', false],
    ]);
    expect([failure.message, failure.status, failure.sent]).toEqual(['vendor: http_400', 400, 1]);
  });

  it('no answer at all is retryable', async () => {
    const http: VendorHttp = {
      fetch: () =>
        Promise.reject(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNRESET' } })),
      timeoutMs: 5000,
    };
    const failure = await failureOf(sendAll(events(2), http, endpoint(byStatus)));
    expect(verdicts(failure)).toEqual([
      ['m0', 'connection_reset', true],
      ['m1', 'connection_reset', true],
    ]);
    expect([failure.retryable, failure.requests, failure.detail]).toEqual([
      true,
      1,
      'ECONNRESET: fetch failed',
    ]);
  });

  it('accepted except some items: those fail with the answer’s status, each once per event', async () => {
    const { http } = vendor();
    const partial = (_: VendorResponse, items: readonly string[]): Verdict => ({
      kind: 'accepted',
      rejected: [
        { index: items.indexOf('m1b'), reason: 'rejected: bad', retryable: false },
        { index: items.indexOf('m1a'), reason: 'rejected: again', retryable: false },
        { index: 99, reason: 'rejected: nobody', retryable: false },
        { index: items.indexOf('m2a'), reason: 'rejected: later', retryable: true },
      ],
    });
    const failure = await failureOf(
      sendAll(events(3), http, endpoint(partial), (o) => [`${o.event.messageId}a`, `${o.event.messageId}b`]),
    );
    expect(verdicts(failure)).toEqual([
      ['m1', 'rejected: bad', false],
      ['m2', 'rejected: later', true],
    ]);
    expect([failure.message, failure.retryable, failure.status, failure.sent]).toEqual([
      'vendor: rejected: bad',
      true,
      200,
      1,
    ]);
  });

  it('resend without the rejected items: the others go again at once', async () => {
    const { bodies, http } = vendor();
    let calls = 0;
    const amplitudeLike = (_: VendorResponse, items: readonly string[]): Verdict =>
      (calls += 1) === 1
        ? {
            kind: 'resend_without',
            rejected: [{ index: items.indexOf('m1'), reason: 'invalid: m1', retryable: false }],
          }
        : { kind: 'accepted' };
    const failure = await failureOf(sendAll(events(3), http, endpoint(amplitudeLike)));
    expect(bodies).toEqual([
      ['m0', 'm1', 'm2'],
      ['m0', 'm2'],
    ]);
    expect(verdicts(failure)).toEqual([['m1', 'invalid: m1', false]]);
    expect([failure.sent, failure.requests]).toEqual([2, 2]);
  });

  it('resend without nothing named fails the request rather than loop', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      sendAll(
        events(2),
        http,
        endpoint(() => ({ kind: 'resend_without', rejected: [{ index: 7, reason: 'x', retryable: false }] })),
      ),
    );
    expect(bodies).toHaveLength(1);
    expect(verdicts(failure)).toEqual([
      ['m0', 'rejected_without_items', false],
      ['m1', 'rejected_without_items', false],
    ]);
  });

  it('resend without every item sends nothing more', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      sendAll(
        events(1),
        http,
        endpoint(() => ({
          kind: 'resend_without',
          rejected: [{ index: 0, reason: 'bad', retryable: false }],
        })),
      ),
    );
    expect(bodies).toEqual([['m0']]);
    expect(verdicts(failure)).toEqual([['m0', 'bad', false]]);
  });

  it('413: halves the request until each event passes or is refused alone', async () => {
    const { bodies, http } = vendor();
    const tooLarge = (_: VendorResponse, items: readonly string[]): Verdict =>
      items.length > 1 || items[0] === 'm2' ? { kind: 'too_large' } : { kind: 'accepted' };
    const failure = await failureOf(sendAll(events(3), http, endpoint(tooLarge)));
    expect(bodies).toEqual([['m0', 'm1', 'm2'], ['m0', 'm1'], ['m0'], ['m1'], ['m2']]);
    expect(verdicts(failure)).toEqual([['m2', 'event_too_large: the vendor refused it alone (413)', false]]);
    expect([failure.sent, failure.requests]).toEqual([2, 5]);
  });

  it('413 to everything: gives up after maxSplitRequests, retryably', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      sendAll(
        events(4),
        { ...http, maxSplitRequests: 2 },
        endpoint(() => ({ kind: 'too_large' })),
      ),
    );
    expect(bodies).toEqual([
      ['m0', 'm1', 'm2', 'm3'],
      ['m0', 'm1'],
      ['m2', 'm3'],
    ]);
    expect(verdicts(failure)).toEqual([
      ['m0', 'too_large: still 413 after 2 smaller requests', true],
      ['m1', 'too_large: still 413 after 2 smaller requests', true],
      ['m2', 'too_large: still 413 after 2 smaller requests', true],
      ['m3', 'too_large: still 413 after 2 smaller requests', true],
    ]);
  });

  it('splits up to 16 requests by default', async () => {
    const { bodies, http } = vendor();
    await failureOf(
      sendAll(
        events(64),
        http,
        endpoint(() => ({ kind: 'too_large' }), { maxItems: 64, maxBodyBytes: 10_000 }),
      ),
    );
    expect(bodies).toHaveLength(17);
  });

  it('isolate: halves the request to find the invalid event, which fails alone with the vendor’s reason', async () => {
    const { bodies, http } = vendor();
    const bad: RequestFailure = { reason: 'http_400', retryable: false, status: 400, detail: 'invalid item' };
    const isolate = (_: VendorResponse, items: readonly string[]): Verdict =>
      items.includes('m3') ? { kind: 'isolate', failure: bad } : { kind: 'accepted' };
    const failure = await failureOf(sendAll(events(4), http, endpoint(isolate)));
    expect(bodies).toEqual([['m0', 'm1', 'm2', 'm3'], ['m0', 'm1'], ['m2', 'm3'], ['m2'], ['m3']]);
    expect(verdicts(failure)).toEqual([['m3', 'http_400', false]]);
    expect([failure.message, failure.status, failure.detail, failure.sent]).toEqual([
      'vendor: http_400',
      400,
      'invalid item',
      3,
    ]);
  });

  it('isolate: past maxSplitRequests the rest is retried in other batches', async () => {
    const { bodies, http } = vendor();
    const bad: RequestFailure = { reason: 'http_400', retryable: false };
    const failure = await failureOf(
      sendAll(
        events(3),
        { ...http, maxSplitRequests: 3 },
        endpoint(() => ({ kind: 'isolate', failure: bad })),
      ),
    );
    expect(bodies).toEqual([['m0', 'm1', 'm2'], ['m0', 'm1'], ['m2']]);
    expect(verdicts(failure)).toEqual(
      [
        ['m2', 'http_400', false],
        ['m0', 'http_400: not isolated within 3 smaller requests', true],
        ['m1', 'http_400: not isolated within 3 smaller requests', true],
      ].sort(),
    );
  });

  it('isolate: gives up before a split that would pass maxSplitRequests', async () => {
    const { bodies, http } = vendor();
    const bad: RequestFailure = { reason: 'http_400', retryable: false };
    const failure = await failureOf(
      sendAll(
        events(4),
        { ...http, maxSplitRequests: 2 },
        endpoint(() => ({ kind: 'isolate', failure: bad })),
      ),
    );
    expect(bodies).toEqual([
      ['m0', 'm1', 'm2', 'm3'],
      ['m0', 'm1'],
      ['m2', 'm3'],
    ]);
    expect(verdicts(failure).map(([id, , retryable]) => [id, retryable])).toEqual([
      ['m0', true],
      ['m1', true],
      ['m2', true],
      ['m3', true],
    ]);
  });

  it('fails alone an event whose items JSON cannot encode', async () => {
    const { bodies, http } = vendor();
    const anything = endpoint<unknown>(byStatus);
    const failure = await failureOf(
      deliverAll('vendor', events(2), http, async (ledger) => {
        await ledger.deliver(
          anything,
          ledger.mapEvents((o): unknown[] => (o.event.messageId === 'm0' ? [10n] : [o.event.messageId])),
        );
      }),
    );
    expect(bodies).toEqual([['m1']]);
    expect(verdicts(failure)).toEqual([
      ['m0', 'mapping_failed: Do not know how to serialize a BigInt', false],
    ]);
  });

  it('sets apart events too large for any request, permanently', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      sendAll(events(2), http, endpoint(byStatus, { maxItems: 10, maxBodyBytes: 10 }), (o) =>
        o.event.messageId === 'm0' ? ['x'.repeat(20)] : ['m1'],
      ),
    );
    expect(bodies).toEqual([['m1']]);
    expect(verdicts(failure)).toEqual([['m0', 'event_too_large: 23 bytes exceed 8 per request', false]]);
  });

  it('an aborted send stops before its next request, retryably', async () => {
    const caller = new AbortController();
    const { bodies, http } = vendor();
    const failure = await failureOf(
      deliverAll('vendor', events(2), { ...http, signal: caller.signal }, async (ledger) => {
        const mapped = ledger.mapEvents((o) => [o.event.messageId]);
        caller.abort();
        await ledger.deliver(endpoint(byStatus), mapped);
      }),
    );
    expect(bodies).toEqual([]);
    expect(verdicts(failure)).toEqual([
      ['m0', 'aborted', true],
      ['m1', 'aborted', true],
    ]);
  });

  it('a halted ledger sends nothing more, and keeps the first halt', async () => {
    const { bodies, http } = vendor();
    const failure = await failureOf(
      deliverAll('vendor', events(1), http, async (ledger) => {
        ledger.halt({ reason: 'first', retryable: true, retryAfterMs: 5 });
        ledger.halt({ reason: 'second', retryable: false });
        await ledger.deliver(
          endpoint(byStatus),
          ledger.mapEvents((o) => [o.event.messageId]),
        );
      }),
    );
    expect(bodies).toEqual([]);
    expect(verdicts(failure)).toEqual([['m0', 'first', true]]);
    expect(failure.retryAfterMs).toBe(5);
  });

  it('counts requests made outside deliver, and leaves events no endpoint took as not attempted', async () => {
    const failure = await failureOf(
      deliverAll('vendor', events(2), vendor().http, (ledger) => {
        ledger.noteRequest();
        ledger.skip(1, 'nothing to send');
        return Promise.resolve();
      }),
    );
    expect(verdicts(failure)).toEqual([['m0', 'not_attempted', true]]);
    expect([failure.message, failure.requests, failure.skipped]).toEqual([
      'vendor: undelivered',
      1,
      [{ messageId: 'm1', reason: 'nothing to send' }],
    ]);
    expect(failure).not.toHaveProperty('status', expect.anything());
  });

  it('an outcome with nothing undelivered is the count sent, requests and skips', () => {
    const ledger = new DeliveryLedger('vendor', events(2), vendor().http);
    ledger.skip(0, 'skipped');
    ledger.skip(1, 'also skipped');
    ledger.noteRequest();
    expect(ledger.finish()).toEqual({
      sent: 0,
      requests: 1,
      skipped: [
        { messageId: 'm0', reason: 'skipped' },
        { messageId: 'm1', reason: 'also skipped' },
      ],
    });
  });
});
