import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { type Browser, type Page, type Request } from 'playwright-core';
import { launchChromium } from '@pipeline/control-plane/testing/chromium';
import { createApp as createControlPlaneApp } from '@pipeline/control-plane/composition';
import { TEST_CREDENTIAL_KEYS, TEST_INTERNAL_TOKENS } from '@pipeline/control-plane/testing/harness';
import {
  runConsumer,
  createDestination,
  ForwardingDestination,
  TenantDirectory,
  type RunningConsumer,
} from '@pipeline/destinations';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { forwarderFor } from '@pipeline/catalog';
import { ensureTopics } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { createRedis, DebugStreamWriter, type RedisClient } from '@pipeline/redis';
import { warehouseSchemaFor } from '@pipeline/tenancy';
// The delivery app's own recorder, wired as apps/delivery/src/composition.ts wires it.
import { RedisOutcomeRecorder } from '../../../delivery/src/debugger/redis-outcome-recorder';
import { createApp } from '../app';
import { StaticHealth } from '../health/delivery-health';
import { loadSdkFile } from '../sdk/sdk-file';
import { startHosted, type Hosted } from '../testing/ingestion-harness';
import { orderPlan } from '../testing/order-plan';

// The console's live debugger end to end, as a site owner sees it: a test page on another
// origin pastes the snippet, loads the browser SDK from ingestion (the hosted harness's collect
// service, which records what it takes in Redis) and tracks an event; the same page sends an
// event the server rejects. A real warehouse consumer (Kafka → PostgreSQL) records its outcome
// with the delivery app's RedisOutcomeRecorder. A control plane on the harness's database
// serves /console and the debugger API; headless Chromium, signed in with an API key, shows
// both events and the accepted one's warehouse outcome.
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const logger = createLogger({ service: 'console-debugger-test', stream: new PassThrough() });

const SDK_PATH = path.resolve(__dirname, '../../../../libs/sdk/dist/sdk.js');
const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');

let hosted: Hosted;
let redis: RedisClient;
let outcomeRedis: RedisClient;
let server: Server;
let ingestion: Server;
let site: Server;
let browser: Browser;
let base: string;
let ingestionUrl: string;
let siteUrl: string;
let writeKeyId: string;
let db: ScratchDatabase;
let pg: Client;
let consumer: RunningConsumer;
let outcomes: RedisOutcomeRecorder;
let amplitude: LookAlikeServer | undefined;
let amplitudeConsumer: RunningConsumer | undefined;

async function listen(target: Server): Promise<string> {
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(target.address() as AddressInfo).port}`;
}

async function close(target: Server | undefined): Promise<void> {
  if (!target) return;
  target.closeAllConnections();
  await new Promise((resolve) => target.close(resolve));
}

/** Reads until `done` holds or 15 s have passed, and returns the last value read. */
async function until<T>(read: () => T | Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A consumer of `kind`'s topics: the outbox, and its retry and dead-letter topics (made here). */
async function consumerTopics(kind: string) {
  const topics = {
    source: hosted.topic,
    retry: `${hosted.topic}.${kind}.retry`,
    deadLetter: `${hosted.topic}.${kind}.dead-letter`,
  };
  await ensureTopics(
    hosted.kafka,
    [topics.retry, topics.deadLetter].map((topic) => ({ topic, numPartitions: 1 })),
    { replicationFactor: 1, logger },
  );
  return topics;
}

beforeAll(async () => {
  if (!existsSync(SDK_PATH)) throw new Error(`${SDK_PATH} is missing: build @pipeline/sdk first`);
  mkdirSync(SCREENSHOTS, { recursive: true });
  hosted = await startHosted('console debugger', { debugger: { connection: { REDIS_URL } } });
  redis = createRedis({ REDIS_URL }, { logger });
  await redis.connect();
  const controlPlane = createControlPlaneApp({
    dataSource: hosted.controlPlane.db.dataSource,
    logger,
    credentialKeys: TEST_CREDENTIAL_KEYS,
    internalTokens: TEST_INTERNAL_TOKENS,
    debugger: { redis, connection: { REDIS_URL } },
    metrics: hosted.controlPlane.metrics,
  });
  server = createServer(controlPlane);
  base = await listen(server);
  const keys = await fetch(`${base}/api/v1/write-keys`, {
    headers: { Authorization: `Bearer ${hosted.apiKey}` },
  });
  expect(keys.status).toBe(200);
  const list = (await keys.json()) as { data: { id: string; name: string }[] };
  writeKeyId = list.data.find((k) => k.name === 'open')!.id;
  expect(writeKeyId).toBe(hosted.openWriteKeyId);

  // Ingestion on a real port: the harness's collect service, serving the SDK.
  ingestion = createServer(
    createApp({
      logger,
      collect: hosted.collectService,
      health: new StaticHealth(),
      sdk: loadSdkFile(SDK_PATH, logger),
      simulate: { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
      clientAddress: () => null,
    }),
  );
  ingestionUrl = await listen(ingestion);

  // The site: another port, so another origin, with the snippet from /v1/snippet pasted in.
  site = createServer((req, res) => {
    const query = new URLSearchParams({ writeKey: hosted.openWriteKey, host: ingestionUrl });
    void fetch(`${ingestionUrl}/v1/snippet?${query}`)
      .then((answer) => answer.text())
      .then((snippet) => {
        const configured = snippet.replace('a.host=', 'a.flushInterval=100;a.host=');
        if (configured === snippet) throw new Error('the snippet has no a.host= any more');
        res
          .writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' })
          .end(
            `<!doctype html><html><head><title>Shop</title>${configured}</head><body><h1>Shop</h1></body></html>`,
          );
      })
      .catch((error: Error) => res.writeHead(500).end(error.message));
  });
  siteUrl = await listen(site);
  expect(new URL(siteUrl).origin).not.toBe(new URL(ingestionUrl).origin);

  // The warehouse consumer, as `delivery --destination warehouse` runs it with the debugger on.
  db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'console debugger');
  pg = new Client({ connectionString: db.url });
  await pg.connect();
  outcomeRedis = createRedis({ REDIS_URL }, { logger });
  await outcomeRedis.connect();
  outcomes = new RedisOutcomeRecorder(
    new DebugStreamWriter(outcomeRedis, { maxLen: 500, ttlSeconds: 3600, maxPerSecond: 50 }, logger),
  );
  const topics = await consumerTopics('warehouse');
  consumer = await runConsumer({
    kafka: hosted.kafka,
    outcomes,
    destination: createDestination('warehouse', { logger, warehouseUrl: db.url, outcomes }),
    topics,
    groupId: `console-debugger-warehouse-${randomUUID()}`,
    logger,
    maxWaitTimeInMs: 100,
  });
  await consumer.joined;

  browser = await launchChromium();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await consumer?.stop();
  await amplitudeConsumer?.stop();
  await amplitude?.close();
  await pg?.end();
  await db?.drop();
  outcomeRedis?.disconnect();
  await close(site);
  await close(ingestion);
  await close(server);
  redis?.disconnect();
  await hosted?.close();
});

/** The console's debugger of an account's open write key, signed in with that account's API key. */
async function debuggerPage(apiKey: string, keyId: string, keyName = 'open'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  page.setDefaultTimeout(10_000);
  await page.goto(`${base}/console/#/write-keys/${keyId}`);
  await page.getByLabel('API key').fill(apiKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: `Write key “${keyName}”` }).waitFor();
  await page.locator('.live', { hasText: '● live' }).waitFor();
  return page;
}

/** POSTs a batch to /collect from the page, as the SDK sends it; the answer's status and body. */
async function postFrom(
  from: Page,
  writeKey: string,
  batch: Record<string, unknown>[],
): Promise<{ status: number; body: unknown }> {
  return (await from.evaluate(
    async ([host, key, events]) => {
      const response = await fetch(`${host}/collect`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Write-Key': key },
        body: JSON.stringify({ writeKey: key, sentAt: new Date().toISOString(), batch: events }),
      });
      return { status: response.status, body: (await response.json()) as unknown };
    },
    [ingestionUrl, writeKey, batch] as const,
  )) as { status: number; body: unknown };
}

const tracked = (messageId: string, name: string) => ({
  type: 'track',
  event: name,
  messageId,
  anonymousId: 'shopper-b',
  timestamp: new Date().toISOString(),
});

/** The rows of a debugger page showing `messageId`. */
const rowsOf = (page: Page, messageId: string) =>
  page.locator(`button.event-row[data-message-id="${messageId}"]`);

const batchOf = (request: Request) =>
  (JSON.parse(request.postData() ?? '{}') as { batch?: { messageId: string; event?: string }[] }).batch ?? [];

describe('the console’s live debugger', () => {
  it("shows A's debugger what the SDK on another origin sends, a rejected event with its error, and the warehouse row; B's only B's", async () => {
    const { a, b } = hosted.tenants;
    const page = await debuggerPage(a.apiKey, writeKeyId);
    // Account B's debugger, open at the same time: it must show B's events and none of A's.
    const pageB = await debuggerPage(b.apiKey, b.openWriteKeyId);
    const context = await browser.newContext();
    const shop = await context.newPage();
    shop.setDefaultTimeout(10_000);
    await shop.goto(`${siteUrl}/`);
    await shop.waitForFunction('window.analytics && window.analytics.initialized === true');

    // B's event before A's: once A's row shows, B's would have shown on A's page too.
    const bFirst = `b-first-${randomUUID()}`;
    expect(await postFrom(shop, b.openWriteKey, [tracked(bFirst, 'B Checked')])).toMatchObject({
      status: 202,
    });

    // The SDK tracks; its request to /collect names the event's messageId.
    const sdkRequest = shop.waitForRequest(
      (request) =>
        request.url() === `${ingestionUrl}/collect` &&
        request.method() === 'POST' &&
        batchOf(request).some((e) => e.event === 'Console Checked'),
    );
    await shop.evaluate(`analytics.track('Console Checked', { plan: 'pro', seats: 3 })`);
    const request = await sdkRequest;
    const messageId = batchOf(request).find((e) => e.event === 'Console Checked')!.messageId;
    expect((await request.response())?.status()).toBe(202);
    const row = rowsOf(page, messageId);
    await row.waitFor();
    expect(await row.innerText()).toMatch(/accepted[\s\S]*track[\s\S]*Console Checked/);
    expect(await rowsOf(page, bFirst).count()).toBe(0);

    // A marker of B's after A's event: once it shows on B's page, A's would have shown there too.
    const bMarker = `b-marker-${randomUUID()}`;
    expect(await postFrom(shop, b.openWriteKey, [tracked(bMarker, 'B Marker')])).toMatchObject({
      status: 202,
    });
    await rowsOf(pageB, bMarker).waitFor();
    expect(await Promise.all([bFirst, bMarker, messageId].map((id) => rowsOf(pageB, id).count()))).toEqual([
      1, 1, 0,
    ]);

    // The SDK refuses a track without an event name before sending it; the same page sends one
    // with fetch, as the SDK sends (the write key in X-Write-Key and in the body).
    const refused = shop.waitForEvent('console', (message) =>
      /track: event must be a non-empty string; the event is not sent/.test(message.text()),
    );
    await shop.evaluate(`analytics.track('')`);
    expect((await refused).type()).toBe('error');
    const badId = `bad-${randomUUID()}`;
    const { event: _name, ...unnamed } = tracked(badId, '');
    const answer = await postFrom(shop, hosted.openWriteKey, [
      { ...unnamed, anonymousId: 'shopper-1', properties: { plan: 'pro' } },
    ]);
    expect(answer).toEqual({
      status: 400,
      body: {
        ok: false,
        error: 'no_valid_events',
        details: [{ index: 0, errors: [{ message: 'event is required' }] }],
      },
    });
    const bad = page.locator('li.rejected', { has: page.locator(`button[data-message-id="${badId}"]`) });
    await bad.waitFor();
    // B's marker came before A's rejected event: A's page never showed it.
    expect(await rowsOf(page, bMarker).count()).toBe(0);
    expect(await bad.innerText()).toMatch(/rejected[\s\S]*track/);
    const errorText = await bad.locator('.errors').innerText();
    console.log(
      `debugger: the rejected event's error: ${errorText}; /collect answered ${JSON.stringify(answer.body)}`,
    );
    expect(errorText).toBe('event: event is required');
    expect(await page.evaluate("getComputedStyle(document.querySelector('li.rejected button')).color")).toBe(
      'rgb(153, 27, 27)',
    );

    // The warehouse consumer stores each accepted event in its own account's schema.
    const ids = [messageId, bFirst, bMarker];
    const rowsOfAccount = async (accountId: string) => {
      try {
        return (
          await pg.query<{ event: string; message_id: string }>(
            `SELECT event, message_id FROM ${warehouseSchemaFor(accountId)}.events
              WHERE message_id = ANY($1) ORDER BY event`,
            [ids],
          )
        ).rows;
      } catch (error) {
        if ((error as { code?: string }).code === '42P01') return []; // created with the first record
        throw error;
      }
    };
    await until(
      () => rowsOfAccount(a.accountId),
      (found) => found.length > 0,
      "A's row",
    );
    const rowsB = await until(
      () => rowsOfAccount(b.accountId),
      (found) => found.length > 1,
      "B's rows",
    );
    // Read once B's rows are in: none of B's went to A's schema.
    expect(await rowsOfAccount(a.accountId)).toEqual([{ event: 'Console Checked', message_id: messageId }]);
    expect(rowsB).toEqual([
      { event: 'B Checked', message_id: bFirst },
      { event: 'B Marker', message_id: bMarker },
    ]);

    // Its outcome, recorded by the consumer, under Deliveries (Refresh until it is there).
    await row.click();
    const detail = page.getByRole('article');
    await detail.getByRole('heading', { name: 'track “Console Checked”' }).waitFor();
    const payload = JSON.parse(await detail.getByLabel('The event as received').innerText()) as Record<
      string,
      unknown
    >;
    expect(payload).toMatchObject({
      type: 'track',
      event: 'Console Checked',
      messageId,
      properties: { plan: 'pro', seats: 3 },
    });
    const deliveries = detail.locator('table.deliveries tbody tr');
    await until(
      async () => {
        if ((await deliveries.count()) > 0) return true;
        await detail.getByRole('button', { name: 'Refresh' }).click();
        return false;
      },
      (shown) => shown,
      'the warehouse outcome under Deliveries',
    );
    expect(await deliveries.count()).toBe(1);
    expect(await deliveries.first().innerText()).toMatch(/^warehouse\s+stored/);
    await page.screenshot({ path: path.join(SCREENSHOTS, '12-debugger.png'), fullPage: true });
    await context.close();
    await page.close();
    await pageB.close();
  });
  it('shows a plan’s violations as badges, filters on them, and the quarantine at the vendor next to the stored row', async () => {
    const { a } = hosted.tenants;
    const api = async (method: string, route: string, body?: unknown) => {
      const response = await fetch(`${base}${route}`, {
        method,
        headers: { Authorization: `Bearer ${a.apiKey}`, 'Content-Type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as { data: Record<string, unknown> } };
    };
    // A new key: ingestion has not cached it, so its binding is read on its first event.
    const key = await api('POST', '/api/v1/write-keys', { name: 'planned' });
    expect(key.status).toBe(201);
    const [plannedId, plannedKey] = [key.body.data.id as string, key.body.data.key as string];
    const plan = await api('POST', '/api/v1/tracking-plans', {
      name: `orders ${randomUUID()}`,
      plan: orderPlan(['order_id']),
    });
    expect(plan.status).toBe(201);
    const planId = plan.body.data.id as string;
    expect((await api('POST', `/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
    // The account's Amplitude integration (the harness's) is kept from invalid events; the warehouse takes them.
    const integrations = (await api('GET', '/api/v1/integrations')).body as unknown as {
      data: { id: string }[];
    };
    expect(integrations.data).toHaveLength(1);
    const integrationId = integrations.data[0]!.id;
    const bound = await api('PUT', `/api/v1/write-keys/${plannedId}/tracking-plan`, {
      planId,
      version: 'latest',
      policy: {
        actions: { missing_required: 'quarantine' },
        destinations: { warehouse: { missing_required: 'allow' } },
      },
    });
    expect(bound.status).toBe(200);

    // The Amplitude consumer, its integration pointed at a look-alike, recording outcomes as the warehouse's does.
    amplitude = await startLookAlikeVendor('amplitude');
    const tenants = new TenantDirectory(
      {
        lookup: (id) =>
          Promise.resolve({
            accountId: a.accountId,
            writeKeyId: id,
            status: 'active' as const,
            allowedOrigins: [],
            destinations: [{ ...lookAlikeDestination(amplitude as LookAlikeServer), integrationId }],
            warehouse: null,
          }),
      },
      { ttlMs: 60_000 },
      logger,
    );
    const topics = await consumerTopics('amplitude');
    amplitudeConsumer = await runConsumer({
      kafka: hosted.kafka,
      outcomes,
      destination: new ForwardingDestination(
        forwarderFor('amplitude', { baseUrls: { amplitude: amplitude.url }, fetch: globalThis.fetch }),
        tenants,
        logger,
        {},
        outcomes,
      ),
      topics,
      groupId: `console-debugger-amplitude-${randomUUID()}`,
      logger,
      maxWaitTimeInMs: 100,
    });
    await amplitudeConsumer.joined;

    const page = await debuggerPage(a.apiKey, plannedId, 'planned');
    const order = (messageId: string, properties: Record<string, unknown>) => ({
      ...tracked(messageId, 'Order Completed'),
      userId: 'buyer-1',
      properties,
    });
    // Sent from the site's origin: the console's own CSP keeps its pages from calling ingestion.
    const shop = await browser.newPage();
    await shop.goto(`${siteUrl}/`);
    const invalidId = `invalid-${randomUUID()}`;
    const validId = `valid-${randomUUID()}`;
    expect(await postFrom(shop, plannedKey, [order(invalidId, { total: 12 })])).toMatchObject({
      status: 202,
    });
    expect(await postFrom(shop, plannedKey, [order(validId, { order_id: 'o-1' })])).toMatchObject({
      status: 202,
    });
    const invalid = rowsOf(page, invalidId);
    const valid = rowsOf(page, validId);
    await Promise.all([invalid.waitFor(), valid.waitFor()]);
    // A red badge per violation, with its code and path; none on the valid event.
    expect(await invalid.locator('.violation').allInnerTexts()).toEqual([
      'missing_required /properties/order_id',
    ]);
    expect(await valid.locator('.violation').count()).toBe(0);
    expect(await invalid.locator('.violation').evaluate((el) => getComputedStyle(el).color)).toBe(
      'rgb(153, 27, 27)',
    );

    // Violations only: the list is read again with violations=true; the valid event is gone.
    const filtered = page.waitForResponse(
      (r) => r.url().includes('/events?') && r.url().includes('violations=true'),
    );
    await page.getByLabel('Violations only').check();
    expect((await filtered).status()).toBe(200);
    await rowsOf(page, invalidId).waitFor();
    await until(
      () => rowsOf(page, validId).count(),
      (n) => n === 0,
      'the valid event hidden',
    );

    // The detail: the violations, the action taken where, and the outcomes.
    await rowsOf(page, invalidId).click();
    const detail = page.getByRole('article');
    const violations = detail.getByRole('list', { name: 'Violations' });
    expect(await violations.innerText()).toMatch(
      /missing_required\s+\/properties\/order_id\s+\/properties\/order_id is required/,
    );
    expect(await detail.locator('dl.plan-action').innerText()).toMatch(
      /Action \(warehouse and others\)\s+quarantine\s+Action at warehouse\s+allow/,
    );
    const deliveries = detail.locator('table.deliveries tbody tr');
    await until(
      async () => {
        if ((await deliveries.count()) >= 2) return true;
        await detail.getByRole('button', { name: 'Refresh' }).click();
        return false;
      },
      (shown) => shown,
      'the warehouse and Amplitude outcomes under Deliveries',
    );
    const outcomesShown = (await deliveries.allInnerTexts()).map((row) =>
      row
        .split('\t')
        .slice(0, 3)
        .map((c) => c.trim()),
    );
    expect(outcomesShown.sort()).toEqual([
      ['amplitude', 'quarantined', 'missing_required'],
      ['warehouse', 'stored', ''],
    ]);
    expect(
      await deliveries
        .filter({ hasText: 'quarantined' })
        .locator('.badge')
        .evaluate((el) => el.className),
    ).toBe('badge bad');
    // Amplitude got the valid event, never the quarantined one.
    const sentToAmplitude = await until(
      () => JSON.stringify(amplitude?.accepted),
      (sent) => sent.includes(validId),
      'the valid event at Amplitude',
    );
    expect(sentToAmplitude).not.toContain(invalidId);
    await page.screenshot({ path: path.join(SCREENSHOTS, '13-debugger-violations.png'), fullPage: true });
    await shop.close();
    await page.close();
  });
});
