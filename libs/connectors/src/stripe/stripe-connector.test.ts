import { ConnectorError, type StreamPage } from '../connector';
import {
  recordStripeEvent,
  startStripeLookAlike,
  stripeRecords,
  type SourceLookAlike,
} from '../testing/source-look-alikes';
import { StripeConnector } from './stripe-connector';

async function readAll(pages: AsyncIterable<StreamPage>) {
  const records: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  for await (const page of pages) {
    records.push(...page.records);
    cursor = page.cursor;
  }
  return { records, cursor };
}

describe('StripeConnector against a Stripe look-alike', () => {
  let stripe: SourceLookAlike;
  const now = 1_780_000_000;
  beforeEach(async () => {
    stripe = await startStripeLookAlike();
    stripe.data.set('customers', stripeRecords('customers', 250, now));
    stripe.data.set('subscriptions', stripeRecords('subscriptions', 10, now));
  });
  afterEach(() => stripe.close());
  const connector = (over: Partial<ConstructorParameters<typeof StripeConnector>[0]> = {}) =>
    new StripeConnector({ secretKey: stripe.secret, baseUrl: stripe.url, minDelayMs: 5, ...over });

  const nowSeconds = () => Math.floor(Date.now() / 1000);

  it('reads a stream through every page with starting_after; the cursor is when the listing began, less a minute', async () => {
    const before = nowSeconds();
    const { records, cursor } = await readAll(connector().read('customers', { cursor: null }));
    const after = nowSeconds();
    expect(records).toHaveLength(250);
    expect(new Set(records.map((r) => r.id)).size).toBe(250);
    expect(Number(cursor)).toBeGreaterThanOrEqual(before - 61);
    expect(Number(cursor)).toBeLessThanOrEqual(after - 60);
    const paths = stripe.requests.map((r) => r.path);
    expect(paths).toHaveLength(3);
    expect(paths[1]).toMatch(/starting_after=cus_00000150/);
    const bounded = await readAll(
      connector().read('customers', { cursor: null, startDate: new Date((now - 9) * 1000) }),
    );
    expect(bounded.records).toHaveLength(10);
    expect(stripe.requests.at(-1)?.path).toMatch(new RegExp(`created%5Bgte%5D=${now - 9}`));
  });

  it('reads incrementally from the Events API: an old object updated after the last sync comes with its new values', async () => {
    const first = await readAll(connector().read('customers', { cursor: null }));
    const cursor = Number(first.cursor);
    const old = stripe.data.get('customers')![5]!; // created 244 s before `now`, months ago
    expect(old.created).toBeLessThan(cursor - 30 * 86400);
    const t = cursor + 10; // after the last sync, before the clock
    recordStripeEvent(stripe, 'customers', 'customer.updated', { ...old, name: 'Renamed once' }, t);
    recordStripeEvent(stripe, 'customers', 'customer.updated', { ...old, name: 'Renamed twice' }, t + 1);
    const fresh = { ...stripeRecords('customers', 1, t + 2, 9000)[0]! };
    recordStripeEvent(stripe, 'customers', 'customer.created', fresh, t + 2);
    const gone = stripe.data.get('customers')![7]!;
    recordStripeEvent(stripe, 'customers', 'customer.deleted', gone, t + 3);
    // Other objects' events, also in the same seconds: not customers.
    recordStripeEvent(
      stripe,
      'subscriptions',
      'customer.subscription.updated',
      { ...stripe.data.get('subscriptions')![1]!, status: 'past_due' },
      t + 1,
    );
    recordStripeEvent(stripe, 'charges', 'charge.succeeded', stripeRecords('charges', 1, t)[0]!, t);
    // An event at or before the cursor was loaded by the full list already.
    recordStripeEvent(stripe, 'customers', 'customer.updated', { ...old, name: 'Before the cursor' }, cursor);

    stripe.requests.length = 0;
    const incremental = await readAll(connector().read('customers', { cursor: String(cursor) }));
    expect(incremental.records).toEqual([
      { ...old, name: 'Renamed twice' },
      fresh,
      { ...gone, deleted: true },
    ]);
    const request = decodeURIComponent(stripe.requests[0]!.path);
    expect(request).toContain(`/v1/events?limit=100&created[gt]=${cursor}`);
    expect(request).toContain('types[]=customer.created&types[]=customer.updated&types[]=customer.deleted');
    expect(Number(incremental.cursor)).toBeGreaterThanOrEqual(nowSeconds() - 61);

    const subscriptions = await readAll(connector().read('subscriptions', { cursor: String(cursor) }));
    expect(subscriptions.records).toEqual([{ ...stripe.data.get('subscriptions')![1]!, status: 'past_due' }]);
    // Nothing new since: the events of the last second read are read again (one more of that
    // second may have come after the read), nothing else.
    expect(incremental.cursor).toBe(String(t + 2));
    const again = await readAll(connector().read('customers', { cursor: incremental.cursor }));
    expect(again.records).toEqual([{ ...gone, deleted: true }]);
    expect(Number(again.cursor)).toBeGreaterThanOrEqual(Number(incremental.cursor));
  });

  it('loads events oldest first across pages, and a failure mid-way then a retry from the saved cursor loses nothing', async () => {
    const cursor = nowSeconds() - 3600;
    // 95 events, three in each second, so pages of 10 split seconds; customers 0-9 updated in turn.
    const customers = stripe.data.get('customers')!;
    for (let i = 0; i < 95; i += 1) {
      const target = customers[i % 10]!;
      recordStripeEvent(
        stripe,
        'customers',
        'customer.updated',
        { ...target, version: i },
        cursor + 1 + Math.floor(i / 3),
      );
    }
    const expected = new Map(customers.slice(0, 10).map((c) => [c.id, c]));
    const warehouse = new Map<unknown, Record<string, unknown>>();
    let saved: string | null = String(cursor);
    const loaded: number[] = [];
    const sync = async (attempts: number) => {
      for await (const page of connector({ pageSize: 10, attempts }).read('customers', { cursor: saved })) {
        for (const record of page.records) {
          warehouse.set(record.id, record);
          loaded.push(Number(record.version));
        }
        saved = page.cursor; // saved once the page is loaded, as the sync runner does
      }
    };
    // The walk to the oldest page takes 10 requests; the failure comes on the 5th page to load.
    stripe.failAfter(13, 500);
    await expect(sync(1)).rejects.toMatchObject({ code: 'vendor_unavailable', retryable: true });
    // Four pages loaded (5, 10, 10, 10 events); event 34 is at cursor + 12, as is 35, not loaded.
    expect(loaded).toEqual(Array.from({ length: 35 }, (_, i) => i));
    expect(saved).toBe(String(cursor + 11));
    const events = stripe.data.get('events')!;
    const unloaded = events.filter(
      (e) => Number((e.data as { object: { version: number } }).object.version) > Math.max(...loaded),
    );
    expect(unloaded.length).toBeGreaterThan(0);
    expect(Number(saved)).toBeLessThan(Math.min(...unloaded.map((e) => Number(e.created))));
    expect(loaded).toEqual([...loaded].sort((a, b) => a - b)); // oldest first

    await sync(3);
    expect(warehouse).toEqual(expected);
    expect([...warehouse.values()].map((c) => c.version)).toEqual([90, 91, 92, 93, 94, 85, 86, 87, 88, 89]);
    // Each page's newest second may be loaded twice, never skipped.
    expect(new Set(loaded)).toEqual(new Set(Array.from({ length: 95 }, (_, i) => i)));
    const paths = stripe.requests.map((r) => decodeURIComponent(r.path));
    expect(paths.some((p) => p.includes('ending_before=evt_'))).toBe(true);
    expect(paths.some((p) => p.includes('starting_after=evt_'))).toBe(true);
  });

  it('falls back to a full re-list when the cursor is older than the 30 days Stripe keeps events', async () => {
    const stale = nowSeconds() - 31 * 86400;
    const { records, cursor } = await readAll(connector().read('customers', { cursor: String(stale) }));
    expect(records).toHaveLength(250); // every object, not only those created after the cursor
    expect(stripe.requests.every((r) => r.path.startsWith('/v1/customers?'))).toBe(true);
    expect(stripe.requests[0]!.path).not.toMatch(/created/);
    expect(Number(cursor)).toBeGreaterThanOrEqual(nowSeconds() - 61);
    // The same cursor, with a clock 29 days back: within the 30 days, so events.
    stripe.requests.length = 0;
    await readAll(
      connector({ now: () => Date.now() - 29 * 86400_000 }).read('customers', { cursor: String(stale) }),
    );
    expect(stripe.requests[0]!.path).toMatch(/^\/v1\/events\?/);
  });

  it('asks for canceled subscriptions too (status=all)', async () => {
    const { records } = await readAll(connector().read('subscriptions', { cursor: null }));
    expect(records.filter((r) => r.status === 'canceled')).toHaveLength(2);
  });

  it('retries 429 and a 500 in the middle of a read, and fails retryably once attempts run out', async () => {
    stripe.failNext(429, 2);
    stripe.failAfter(1, 500);
    const { records } = await readAll(connector().read('customers', { cursor: null }));
    expect(records).toHaveLength(250);
    expect(stripe.requests.map((r) => r.status)).toEqual([429, 429, 200, 500, 200, 200]);

    stripe.failNext(503, 10);
    const error = await readAll(connector({ attempts: 3 }).read('customers', { cursor: null })).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectorError);
    expect(error).toMatchObject({ code: 'vendor_unavailable', retryable: true, status: 503 });
  });

  it('honours Retry-After before the next attempt', async () => {
    stripe.failNext(429, 1, '1');
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
    };
    await connector({ sleep }).check();
    expect(waits).toEqual([1000]);
    expect(stripe.requests.map((r) => r.status)).toEqual([429, 200]);
  });

  it('fails permanently on a bad key (check and read) and on an unknown stream', async () => {
    const bad = connector({ secretKey: 'sk_test_wrong' });
    await expect(bad.check()).rejects.toMatchObject({
      code: 'invalid_credentials',
      retryable: false,
      status: 401,
    });
    await expect(readAll(bad.read('customers', { cursor: null }))).rejects.toMatchObject({
      code: 'invalid_credentials',
    });
    expect(stripe.requests.filter((r) => r.status === 401)).toHaveLength(2); // never retried
    await expect(readAll(connector().read('refunds', { cursor: null }))).rejects.toMatchObject({
      code: 'unknown_stream',
    });
    expect(() => new StripeConnector({ secretKey: '' })).toThrow(/secretKey is required/);
  });
});
