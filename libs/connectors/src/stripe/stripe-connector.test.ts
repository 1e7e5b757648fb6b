import { ConnectorError, type StreamPage } from '../connector';
import { connectorFor } from '../connector-registry';
import { startStripeLookAlike, stripeRecords, type SourceLookAlike } from '../testing/source-look-alikes';
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

  it('reads a stream through every page with starting_after and saves the newest created as the cursor', async () => {
    const { records, cursor } = await readAll(connector().read('customers', { cursor: null }));
    expect(records).toHaveLength(250);
    expect(new Set(records.map((r) => r.id)).size).toBe(250);
    expect(cursor).toBe(String(now));
    const paths = stripe.requests.map((r) => r.path);
    expect(paths).toHaveLength(3);
    expect(paths[1]).toMatch(/starting_after=cus_00000150/);
  });

  it('reads incrementally from the cursor, re-reading the rolling window, never before the start date', async () => {
    stripe.data.get('customers')!.push(...stripeRecords('customers', 5, now + 100, 1000));
    const incremental = await readAll(connector().read('customers', { cursor: String(now) }));
    expect(incremental.records.map((r) => r.id)).toContain('cus_00001000');
    expect(incremental.records).toHaveLength(6); // the 5 new ones and the one created at the cursor
    expect(incremental.cursor).toBe(String(now + 100));

    const rolled = await readAll(
      connector().read('customers', { cursor: String(now), rollingPeriodHours: 1 / 60 }),
    );
    expect(rolled.records).toHaveLength(5 + 61); // a minute back: 60 s before the cursor, inclusive
    const bounded = await readAll(
      connector().read('customers', { cursor: null, startDate: new Date((now - 9) * 1000) }),
    );
    expect(bounded.records).toHaveLength(10 + 5);
    expect(stripe.requests.at(-1)?.path).toMatch(new RegExp(`created%5Bgte%5D=${now - 9}`));
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
    const started = Date.now();
    await connector().check();
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
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

  it('is built from a source app’s credentials and config', async () => {
    const built = connectorFor(
      { appType: 'stripe', credentials: { secretKey: stripe.secret }, config: {} },
      { baseUrls: { stripe: stripe.url } },
    );
    await expect(built!.check()).resolves.toBeUndefined();
    expect(built!.streams.map((s) => s.name)).toEqual(['customers', 'charges', 'invoices', 'subscriptions']);
    expect(connectorFor({ appType: 'webhook', credentials: {}, config: {} })).toBeUndefined();
  });
});
