import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StreamPage } from '../connector';
import { shopifyRecords, startShopifyLookAlike, type SourceLookAlike } from '../testing/source-look-alikes';
import { nextPageUrl, ShopifyConnector, shopifyApiVersion } from './shopify-connector';

async function readAll(pages: AsyncIterable<StreamPage>) {
  const records: Record<string, unknown>[] = [];
  const cursors: (string | null)[] = [];
  for await (const page of pages) {
    records.push(...page.records);
    cursors.push(page.cursor);
  }
  return { records, cursors, cursor: cursors.at(-1) ?? null };
}

describe('ShopifyConnector against a Shopify look-alike', () => {
  let shop: SourceLookAlike & { bucketUsed(): number };
  const t0 = new Date('2026-05-01T10:00:00.000Z');
  const later = new Date('2026-05-02T10:00:00.000Z');
  beforeEach(async () => {
    shop = await startShopifyLookAlike({ bucketSize: 40 });
    shop.data.set('orders', shopifyRecords('orders', 600, t0));
    shop.data.set('customers', shopifyRecords('customers', 30, t0));
  });
  afterEach(() => shop.close());
  const connector = (over: Partial<ConstructorParameters<typeof ShopifyConnector>[0]> = {}) =>
    new ShopifyConnector({
      shop: 'lookalike',
      accessToken: shop.secret,
      baseUrl: shop.url,
      minDelayMs: 5,
      ...over,
    });

  it('follows Link-header cursors with only limit (the cursor carries the filters), all orders with status=any', async () => {
    const { records, cursors } = await readAll(connector().read('orders', { cursor: null }));
    expect(records).toHaveLength(600);
    expect(shop.requests.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(shop.requests[0]?.path).toMatch(/status=any/);
    for (const request of shop.requests.slice(1))
      expect(request.path).toMatch(/^[^?]+\?limit=250&page_info=[\w-]+$/);
    // The cursor moves only when the read is complete.
    expect(cursors).toEqual([null, null, t0.toISOString()]);
  });

  it('reads only what changed since the cursor (updated_at_min), minus the rolling window', async () => {
    shop.data.get('customers')!.push(...shopifyRecords('customers', 3, later, 100));
    const incremental = await readAll(
      connector().read('customers', { cursor: t0.toISOString(), rollingPeriodHours: 0 }),
    );
    expect(incremental.records).toHaveLength(33); // updated_at_min is inclusive of the cursor
    const next = await readAll(connector().read('customers', { cursor: incremental.cursor }));
    expect(next.records.map((r) => r.id)).toEqual([100, 101, 102]);
    expect(next.cursor).toBe(later.toISOString());
    expect(decodeURIComponent(shop.requests.at(-1)!.path)).toContain(`updated_at_min=${later.toISOString()}`);
  });

  it('pauses when the call-limit bucket is nearly full instead of running into 429s', async () => {
    await shop.close();
    shop = await startShopifyLookAlike({ bucketSize: 4, leakPerSecond: 2 });
    shop.data.set('customers', shopifyRecords('customers', 30, t0));
    const { records } = await readAll(
      connector({ pageSize: 3, throttlePauseMs: 600 }).read('customers', { cursor: null }),
    );
    expect(records).toHaveLength(30);
    expect(shop.requests.every((r) => r.status === 200)).toBe(true);
  });

  it('waits Retry-After (seconds, "1.0") on a 429 and retries a 5xx', async () => {
    shop.failNext(429, 1, '1.0');
    shop.failAfter(1, 502);
    const waits: number[] = [];
    const sleep = async (ms: number) => {
      waits.push(ms);
    };
    const { records } = await readAll(connector({ sleep }).read('orders', { cursor: null }));
    expect(records).toHaveLength(600);
    // The 429's Retry-After, once; the 502 had none, so p-retry's own backoff alone.
    expect(waits).toEqual([1000]);
    expect(shop.requests.map((r) => r.status)).toEqual([429, 200, 502, 200, 200]);
  });

  it('fails permanently on a bad token and on a bad shop name', async () => {
    await expect(connector({ accessToken: 'shpat_wrong' }).check()).rejects.toMatchObject({
      code: 'invalid_credentials',
      retryable: false,
      status: 401,
    });
    expect(() => new ShopifyConnector({ shop: 'evil.example.com/x', accessToken: 't' })).toThrow(
      /config.shop/,
    );
  });

  it('asks for the supported default Admin API version 2026-10 unless config.apiVersion names another', async () => {
    expect(shopifyApiVersion).toBe('2026-10');
    await connector().check();
    await readAll(connector().read('customers', { cursor: null }));
    await connector({ apiVersion: '2026-07' }).check();
    await connector({ apiVersion: '2027-01' }).check();
    expect(shop.requests.map((r) => r.path.split('?')[0])).toEqual([
      '/admin/api/2026-10/shop.json',
      '/admin/api/2026-10/customers.json',
      '/admin/api/2026-07/shop.json',
      '/admin/api/2027-01/shop.json',
    ]);
  });

  it('refuses a config.apiVersion that is not a stable quarterly version (YYYY-01|04|07|10)', () => {
    for (const bad of ['2026-11', '2026-1', '26-10', '2026-10-01', 'unstable', '2026-10 ', '2026/10', ''])
      expect(() => connector({ apiVersion: bad })).toThrow(
        expect.objectContaining({ code: 'invalid_config', retryable: false }),
      );
    expect(
      () => new ShopifyConnector({ shop: 'lookalike', accessToken: 't', apiVersion: '2025-13' }),
    ).toThrow(/config.apiVersion must be a stable Admin API version.*"2025-13"/);
    for (const good of ['2025-01', '2025-04', '2026-07', '2026-10'])
      expect(() => connector({ apiVersion: good })).not.toThrow();
  });

  it('stops at a next-page link on another origin: that host gets no request and no token', async () => {
    const seen: IncomingHttpHeaders[] = [];
    const foreign = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"orders":[]}');
    });
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    const foreignOrigin = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
    try {
      // Same host, other port; then the shop's host under another name: both are other origins.
      for (const linkOrigin of [foreignOrigin, shop.url.replace('127.0.0.1', 'localhost')]) {
        await shop.close();
        shop = await startShopifyLookAlike({ linkOrigin });
        shop.data.set('orders', shopifyRecords('orders', 600, t0));
        const pages: StreamPage[] = [];
        const reading = (async () => {
          for await (const page of connector().read('orders', { cursor: null })) pages.push(page);
        })();
        await expect(reading).rejects.toMatchObject({
          code: 'foreign_next_link',
          retryable: false,
          message: 'shopify: the next page of orders is on another host than the shop; stopped',
        });
        expect(pages).toHaveLength(0);
        expect(shop.requests.map((r) => r.status)).toEqual([200]);
      }
      expect(seen).toHaveLength(0);
    } finally {
      await new Promise((resolve) => foreign.close(resolve));
    }
  });

  it('follows a relative next-page link on the shop itself', async () => {
    await shop.close();
    shop = await startShopifyLookAlike({ linkOrigin: '' });
    shop.data.set('orders', shopifyRecords('orders', 300, t0));
    const { records } = await readAll(connector().read('orders', { cursor: null }));
    expect(records).toHaveLength(300);
    expect(shop.requests.map((r) => r.status)).toEqual([200, 200]);
  });

  it('parses Link headers as Shopify’s client does', () => {
    expect(
      nextPageUrl(
        '<https://s/o.json?page_info=a>; rel="previous", <https://s/o.json?page_info=b>; rel="next"',
      ),
    ).toBe('https://s/o.json?page_info=b');
    expect(nextPageUrl('<https://s/o.json?page_info=a>; rel="previous"')).toBeUndefined();
    expect(nextPageUrl(null)).toBeUndefined();
  });
});
