import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Analytics } from '@segment/analytics-node';
import { Client } from 'pg';
import { type Browser } from 'playwright-core';
import { launchChromium } from '@pipeline/control-plane/testing/chromium';
import { runConsumer, createDestination, type RunningConsumer } from '@pipeline/destinations';
import { ensureTopics } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { startHosted, type Hosted } from '../testing/ingestion-harness';

const ANALYTICS_NEXT_UMD = path.dirname(require.resolve('@segment/analytics-next/dist/umd/index.js'));
const logger = createLogger({ service: 'segment-libraries-test', stream: new PassThrough() });

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

/** Reads until `done` holds, at most 20 s; returns the last value read. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

// Segment's own libraries, unmodified from npm, pointed at ingestion: events go through the
// real outbox (Kafka) and the real warehouse consumer into the write key's account schema.
describe('Segment libraries send to us unchanged (real Kafka, Redis, PostgreSQL, control plane)', () => {
  let h: Hosted;
  let ingestion: Server;
  let ingestionUrl: string;
  let db: ScratchDatabase;
  let client: Client;
  let consumer: RunningConsumer;
  let schema: string;

  beforeAll(async () => {
    h = await startHosted('segment libraries', { backstopEps: 1_000_000 });
    ingestion = createServer(h.app);
    ingestionUrl = await listen(ingestion);
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'segment libraries');
    client = new Client({ connectionString: db.url });
    await client.connect();
    schema = warehouseSchemaFor(h.accountId);
    const topics = { source: h.topic, retry: `${h.topic}.retry`, deadLetter: `${h.topic}.dead-letter` };
    await ensureTopics(
      h.kafka,
      [topics.retry, topics.deadLetter].map((topic) => ({ topic, numPartitions: 1 })),
      {
        replicationFactor: 1,
        logger,
      },
    );
    consumer = await runConsumer({
      kafka: h.kafka,
      destination: createDestination('warehouse', { logger, warehouseUrl: db.url }),
      topics,
      groupId: `segment-libraries-${randomUUID()}`,
      logger,
      maxWaitTimeInMs: 100,
    });
  });

  afterAll(async () => {
    await consumer?.stop();
    await client?.end();
    await db?.drop();
    await close(ingestion);
    await h.close();
  });

  const rows = async (sql: string, params: unknown[] = []) => {
    try {
      return (await client.query(sql, params)).rows as Record<string, unknown>[];
    } catch (error) {
      // The consumer creates the account's tables with its first record.
      if ((error as { code?: string }).code === '42P01') return [];
      throw error;
    }
  };

  it('@segment/analytics-node: every call with only a userId lands once in the account’s tables', async () => {
    const analytics = new Analytics({ writeKey: h.openWriteKey, host: ingestionUrl });
    const userId = `node-${randomUUID()}`;
    analytics.track({ userId, event: 'Order Completed', properties: { total: 42.5, currency: 'EUR' } });
    analytics.page({ userId, name: 'Pricing', properties: { path: '/pricing' } });
    analytics.screen({ userId, name: 'Checkout', properties: { step: 2 } });
    analytics.identify({ userId, traits: { email: 'ada@example.com', plan: 'pro' } });
    analytics.group({ userId, groupId: `group-${userId}`, traits: { seats: 12 } });
    analytics.alias({ userId, previousId: `anon-${userId}` });
    await analytics.closeAndFlush();

    const events = await until(
      () =>
        rows(
          `SELECT type, event, name, properties, anonymous_id, context_library_name FROM ${schema}.events WHERE user_id = $1 ORDER BY type`,
          [userId],
        ),
      (found) => found.length >= 3,
    );
    expect(events).toEqual([
      {
        type: 'page',
        event: null,
        name: 'Pricing',
        properties: { path: '/pricing' },
        anonymous_id: null,
        context_library_name: '@segment/analytics-node',
      },
      {
        type: 'screen',
        event: null,
        name: 'Checkout',
        properties: { step: 2 },
        anonymous_id: null,
        context_library_name: '@segment/analytics-node',
      },
      {
        type: 'track',
        event: 'Order Completed',
        name: null,
        properties: { total: 42.5, currency: 'EUR' },
        anonymous_id: null,
        context_library_name: '@segment/analytics-node',
      },
    ]);
    const users = await until(
      () => rows(`SELECT traits FROM ${schema}.users WHERE user_id = $1`, [userId]),
      (r) => r.length > 0,
    );
    expect(users).toEqual([{ traits: { email: 'ada@example.com', plan: 'pro' } }]);
    const groups = await until(
      () => rows(`SELECT group_id, traits FROM ${schema}.groups WHERE user_id = $1`, [userId]),
      (r) => r.length > 0,
    );
    expect(groups).toEqual([{ group_id: `group-${userId}`, traits: { seats: 12 } }]);
    const aliases = await until(
      () => rows(`SELECT previous_id FROM ${schema}.aliases WHERE user_id = $1`, [userId]),
      (r) => r.length > 0,
    );
    expect(aliases).toEqual([{ previous_id: `anon-${userId}` }]);
    // Exactly once: one row per message id across the tables.
    const counts = await rows(
      `SELECT count(*)::int AS n, count(DISTINCT message_id)::int AS distinct_ids FROM ${schema}.events WHERE user_id = $1`,
      [userId],
    );
    expect(counts).toEqual([{ n: 3, distinct_ids: 3 }]);
  });

  it('@segment/analytics-next in Chromium, loaded with cdnURL pointing at us: a page view and a track land', async () => {
    const site = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://site');
      if (url.pathname.startsWith('/ajs/')) {
        const file = path.join(ANALYTICS_NEXT_UMD, path.basename(url.pathname));
        try {
          res.writeHead(200, { 'Content-Type': 'application/javascript' }).end(readFileSync(file));
        } catch {
          res.writeHead(404).end();
        }
        return;
      }
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><html><head><title>Shop</title>
<script src="/ajs/index.js"></script>
<script>
window.sent = AnalyticsNext.AnalyticsBrowser.load({ writeKey: ${JSON.stringify(h.openWriteKey)}, cdnURL: ${JSON.stringify(ingestionUrl)} })
  .then(async ([analytics]) => {
    await analytics.page('Home', { variant: 'b' });
    await analytics.track('Clicked Buy', { sku: 'sku-1' });
    return analytics.user().anonymousId();
  });
</script></head><body>Shop</body></html>`);
    });
    const siteUrl = await listen(site);
    let browser: Browser | undefined;
    try {
      browser = await launchChromium();
      const page = await browser.newPage();
      await page.goto(`${siteUrl}/`);
      const anonymousId = (await page
        .waitForFunction('window.sent', undefined, { timeout: 20_000 })
        .then(() => page.evaluate('window.sent'))) as string;
      expect(anonymousId).toMatch(/^[0-9a-f-]{36}$/);

      const events = await until(
        () =>
          rows(
            `SELECT type, event, name, properties, context_library_name, context_page_path FROM ${schema}.events WHERE anonymous_id = $1 ORDER BY type`,
            [anonymousId],
          ),
        (found) => found.length >= 2,
      );
      expect(events).toEqual([
        {
          type: 'page',
          event: null,
          name: 'Home',
          properties: expect.objectContaining({ variant: 'b', path: '/', title: 'Shop' }),
          context_library_name: 'analytics.js',
          context_page_path: '/',
        },
        {
          type: 'track',
          event: 'Clicked Buy',
          name: null,
          properties: { sku: 'sku-1' },
          context_library_name: 'analytics.js',
          context_page_path: '/',
        },
      ]);
    } finally {
      await browser?.close();
      await close(site);
    }
  });
});
