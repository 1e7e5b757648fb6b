import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DeliveryFailure, type OutboundEvent } from '@pipeline/destinations';
import {
  lookAlikeDestination,
  lookAlikes,
  rawSampleEvent,
  startLookAlikeVendor,
  type ContractEvents,
  type LookAlikeServer,
  type LookAlikeVendor,
} from '@pipeline/destinations/testing';
import { forwarderFor, forwardingAppTypes } from './catalog';

/** The operator setting that lets tenant URLs (the webhook's) reach these local servers. */
const loopback = ['127.0.0.0/8'];

// The contract every forwarder keeps, checked against each vendor's look-alike: batching at the
// vendor's count limit, retryable and permanent failures, and a failure part-way through a
// send reporting exactly what went.

/**
 * Each vendor's events per request and how it answers a wrong key, from the `contract` of its
 * look-alike (ForwarderContract in forwarding/testing/look-alike.ts says what each field means),
 * with its sample events as a generator.
 */
interface VendorContract {
  vendor: LookAlikeVendor;
  perRequest?: number;
  authStatus: number;
  /** Events this vendor maps to exactly one item each, where plain track events are skipped. */
  events?: (count: number) => OutboundEvent[];
  /** Send once first, so the client caches what it fetches before any data request. */
  warm?: boolean;
}

/** Small track events by a known user: every vendor maps each to exactly one item. */
const trackEvents = (count: number): OutboundEvent[] =>
  Array.from({ length: count }, (_, i) =>
    rawSampleEvent({ type: 'track', userId: `u-${i % 50}`, event: 'Clicked' }),
  );

/** Received now: Meta takes events of the last 7 days only. */
const recentTrackEvents = (count: number): OutboundEvent[] =>
  trackEvents(count).map((outbound) => ({
    event: { ...outbound.event, timestamp: new Date().toISOString() },
    receipt: { ...outbound.receipt, receivedAt: new Date(), batchSentAt: undefined },
  }));

/** HubSpot upserts contacts from identify calls with an email, one contact per address. */
const identifyEvents = (count: number): OutboundEvent[] =>
  Array.from({ length: count }, (_, i) =>
    rawSampleEvent({ type: 'identify', userId: `u-${i}`, traits: { email: `u-${i}@example.com` } }),
  );

/** Google Ads converts events with a click id, from now. */
const clickEvents = (count: number): OutboundEvent[] =>
  recentTrackEvents(count).map((outbound, i) => ({
    ...outbound,
    event: { ...outbound.event, context: { clickId: { gclid: `gclid-${i}` } } },
  }));

const generators: Record<ContractEvents, (count: number) => OutboundEvent[]> = {
  track: trackEvents,
  recentTrack: recentTrackEvents,
  identify: identifyEvents,
  click: clickEvents,
};

const vendors: VendorContract[] = lookAlikes.map(({ vendor, contract }) => ({
  vendor,
  ...contract,
  events: contract.events === undefined ? undefined : generators[contract.events],
}));
const defaultEvents = trackEvents;
const countLimited = vendors.flatMap(({ perRequest, ...contract }) =>
  perRequest ? [{ ...contract, perRequest }] : [],
);

/** Sends one event so the client caches what it fetches first, then forgets that request. */
async function warmUp(contract: Pick<VendorContract, 'vendor' | 'events' | 'warm'>, server: LookAlikeServer) {
  if (!contract.warm) return;
  const forwarder = forwarderFor(contract.vendor, { baseUrls: { [contract.vendor]: server.url } })!;
  await forwarder.send(lookAlikeDestination(server), (contract.events ?? trackEvents)(1));
  server.requests.length = 0;
  server.accepted.length = 0;
}

async function failureOf(promise: Promise<unknown>): Promise<DeliveryFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof DeliveryFailure) return error;
    throw error;
  }
  throw new Error('expected a DeliveryFailure');
}

/** Items per request the look-alike accepted, from the request bodies. */
function itemsPerRequest(server: LookAlikeServer): number[] {
  return server.requests.map((request) => {
    const body = JSON.parse(request.body) as unknown;
    if (Array.isArray(body)) return body.length;
    const record = body as Record<string, unknown[] | undefined>;
    return ['events', 'batch', 'attributes', 'purchases', 'inputs', 'data', 'conversions'].reduce(
      (sum, key) => sum + (record[key]?.length ?? 0),
      0,
    );
  });
}

describe.each(countLimited)('$vendor forwarder batching', (contract) => {
  const { vendor, perRequest } = contract;
  const trackEvents = contract.events ?? defaultEvents;
  let server: LookAlikeServer;
  const forwarder = () =>
    forwarderFor(vendor, {
      allowPrivateRanges: loopback,
      baseUrls: { [vendor]: server.url },
      timeoutMs: 2000,
    })!;

  beforeEach(async () => {
    server = await startLookAlikeVendor(vendor);
    await warmUp(contract, server);
  });
  afterEach(() => server.close());

  it(`splits a send at ${perRequest} events per request`, async () => {
    const events = trackEvents(2 * perRequest + 1);
    const outcome = await forwarder().send(lookAlikeDestination(server), events);
    expect(outcome).toEqual({ sent: events.length, requests: 3, skipped: [] });
    expect(itemsPerRequest(server)).toEqual([perRequest, perRequest, 1]);
    expect(server.accepted).toHaveLength(events.length);
  });

  it('reports what went when the third request fails, and never the events already accepted', async () => {
    server.passNext(2);
    server.failNext({ status: 503 });
    const events = trackEvents(2 * perRequest + 1);
    const failure = await failureOf(forwarder().send(lookAlikeDestination(server), events));
    expect(failure.retryable).toBe(true);
    expect(failure.status).toBe(503);
    expect(failure.sent).toBe(2 * perRequest);
    expect(failure.requests).toBe(3);
    expect(failure.undelivered.map((u) => u.event)).toEqual([events[2 * perRequest]]);
    expect(server.accepted).toHaveLength(2 * perRequest);
  });
});

describe.each(vendors)('$vendor forwarder contract', (contract) => {
  const { vendor, perRequest = 100, authStatus } = contract;
  const trackEvents = contract.events ?? defaultEvents;
  let server: LookAlikeServer;
  const forwarder = () =>
    forwarderFor(vendor, {
      allowPrivateRanges: loopback,
      baseUrls: { [vendor]: server.url },
      timeoutMs: 2000,
    })!;

  beforeEach(async () => {
    server = await startLookAlikeVendor(vendor);
    await warmUp(contract, server);
  });
  afterEach(() => server.close());

  it('429: retryable, waiting what Retry-After says', async () => {
    server.failNext({ status: 429, retryAfter: '7' });
    const events = trackEvents(3);
    const failure = await failureOf(forwarder().send(lookAlikeDestination(server), events));
    expect(failure).toMatchObject({ retryable: true, status: 429, retryAfterMs: 7000, sent: 0 });
    expect(failure.undelivered).toHaveLength(3);
    expect(failure.undelivered.every((u) => u.retryable)).toBe(true);
  });

  it('500: retryable, the whole send stopped', async () => {
    server.failNext({ status: 500 });
    const events = trackEvents(perRequest + 1);
    const failure = await failureOf(forwarder().send(lookAlikeDestination(server), events));
    expect(failure).toMatchObject({ retryable: true, status: 500, sent: 0, requests: 1 });
    expect(failure.undelivered).toHaveLength(events.length);
  });

  it('400: permanent, with the vendor’s reason', async () => {
    server.failNext({ status: 400, body: { message: 'malformed', error: 'malformed' } });
    const failure = await failureOf(forwarder().send(lookAlikeDestination(server), trackEvents(2)));
    expect(failure.retryable).toBe(false);
    expect(failure.status).toBe(400);
    // The vendor's words go to the logs; the tenant sees the status.
    expect(failure.reason).toBe(`${vendor}: http_400`);
    expect(failure.detail).toBe('malformed');
    expect(failure.undelivered).toHaveLength(2);
    expect(failure.undelivered.every((u) => !u.retryable && u.reason === 'http_400')).toBe(true);
  });

  it('wrong credentials: permanent, and no further request is made', async () => {
    const destination = lookAlikeDestination(server);
    destination.credentials = Object.fromEntries(
      Object.keys(destination.credentials).map((key) => [key, `wrong-${key}`]),
    );
    const failure = await failureOf(forwarder().send(destination, trackEvents(2 * perRequest + 1)));
    expect(failure.retryable).toBe(false);
    expect(failure.status).toBe(authStatus);
    expect(failure.requests).toBe(1);
    expect(failure.sent).toBe(0);
    expect(server.accepted).toHaveLength(0);
  });

  it('missing credentials: permanent invalid_config, nothing sent', async () => {
    const destination = { ...lookAlikeDestination(server), credentials: {} };
    const failure = await failureOf(forwarder().send(destination, trackEvents(2)));
    expect(failure.retryable).toBe(false);
    expect(failure.reason).toMatch(
      new RegExp(`^${vendor}: invalid_config: credentials\\.\\w+ .*is required$`),
    );
    expect(failure.requests).toBe(0);
    expect(failure.undelivered).toHaveLength(2);
    expect(server.requests).toHaveLength(0);
  });

  it('connection refused: retryable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise((resolve) => closed.close(resolve));
    const refused = forwarderFor(vendor, {
      allowPrivateRanges: loopback,
      baseUrls: { [vendor]: `http://127.0.0.1:${port}` },
    })!;
    // A webhook has no vendor host to replace: its own URL names the closed port.
    const destination = lookAlikeDestination(
      server,
      vendor === 'webhook' ? { appConfig: { url: `http://127.0.0.1:${port}/hook` } } : {},
    );
    const failure = await failureOf(refused.send(destination, trackEvents(2)));
    expect(failure.retryable).toBe(true);
    expect(failure.reason).toBe(`${vendor}: connection_refused`);
    expect(failure.detail).toMatch(/^ECONNREFUSED: /);
    expect(failure.status).toBeUndefined();
  });

  it('no answer within timeoutMs: retryable', async () => {
    server.delayNext(1500);
    const slow = forwarderFor(vendor, {
      allowPrivateRanges: loopback,
      baseUrls: { [vendor]: server.url },
      timeoutMs: 100,
    })!;
    const failure = await failureOf(slow.send(lookAlikeDestination(server), trackEvents(1)));
    expect(failure.retryable).toBe(true);
    expect(failure.reason).toBe(`${vendor}: timeout: no answer within 100 ms`);
  });

  it('an aborted send stops before the next request, retryable', async () => {
    const controller = new AbortController();
    controller.abort();
    const failure = await failureOf(
      forwarder().send(lookAlikeDestination(server), trackEvents(2), controller.signal),
    );
    expect(failure).toMatchObject({ retryable: true, reason: `${vendor}: aborted`, requests: 0 });
    expect(server.requests).toHaveLength(0);
  });
});

describe('forwarderFor', () => {
  it('knows the vendors events can be forwarded to, and no others', () => {
    // This contract covers every forwarding app type of the catalog.
    expect(vendors.map(({ vendor }) => vendor).sort()).toEqual([...forwardingAppTypes].sort());
    for (const { vendor } of vendors) expect(forwarderFor(vendor)?.appType).toBe(vendor);
    expect(forwarderFor('stripe')).toBeUndefined();
    expect(forwarderFor('web_tracking')).toBeUndefined();
    expect(forwarderFor('facebook_ads')).toBeUndefined();
    expect(forwarderFor('toString')).toBeUndefined();
  });
});
