import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { type Browser, type Page, type Request, type Route } from 'playwright-core';
import { launchChromium } from '@pipeline/control-plane/testing/chromium';
import { WarehouseWriter } from '@pipeline/destinations';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { createApp } from '../app';
import { StaticHealth } from '../health/delivery-health';
import { startHosted, staticApp, type Hosted } from '../testing/ingestion-harness';
import { loadSdkFile } from './sdk-file';

// The browser SDK (libs/sdk) end to end: a plain HTML page of another origin pastes the
// snippet from /v1/snippet, the snippet loads /v1/sdk.js from ingestion, and real headless
// Chromium sends the events to /collect: in static mode, which writes them into a real
// PostgreSQL warehouse (failures injected with Playwright's routing), and in hosted mode,
// where a real per-second rate limit answers 429 and accepted events go to Kafka.

const SDK_PATH = path.resolve(__dirname, '../../../../libs/sdk/dist/sdk.js');
const WRITE_KEY = 'browser-write-key';
const logger = createLogger({ service: 'test', stream: new PassThrough() });

type Row = Record<string, unknown>;

/** What the site serves next: the snippet of `host` for `writeKey`, with `settings` beside the key. */
interface SitePage {
  host: string;
  writeKey: string;
  settings?: string;
  /** A script right after the snippet: calls made before the SDK has loaded. */
  beforeLoad?: string;
}

// One browser and one site (a plain HTML page on its own origin) for every test.
let browser: Browser;
let site: Server;
let siteUrl: string;
let sitePage: SitePage;

beforeAll(async () => {
  if (!existsSync(SDK_PATH)) throw new Error(`${SDK_PATH} is missing: build @pipeline/sdk first`);
  site = createServer((req, res) => {
    void renderSite(req.url ?? '/').then(
      (html) => res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(html),
      (error: Error) => res.writeHead(500).end(error.message),
    );
  });
  siteUrl = await listen(site);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await close(site);
});

/** The page a site owner makes: the snippet from /v1/snippet pasted into the head. */
async function renderSite(url: string): Promise<string> {
  const query = new URLSearchParams({ writeKey: sitePage.writeKey, host: sitePage.host });
  const snippet = await (await fetch(`${sitePage.host}/v1/snippet?${query}`)).text();
  const configured = sitePage.settings ? snippet.replace('a.host=', `${sitePage.settings};a.host=`) : snippet;
  if (sitePage.settings && configured === snippet) throw new Error('the snippet has no a.host= any more');
  const title = `Shop ${new URL(url, siteUrl).pathname}`;
  return `<!doctype html><html><head><title>${title}</title>${configured}<script>${sitePage.beforeLoad ?? ''}</script></head><body><a href="/next">Next</a></body></html>`;
}

/** A new visitor: its own browser context (own localStorage), its console and requests recorded. */
async function visitor() {
  const context = await browser.newContext();
  const page = await context.newPage();
  const consoleLines: string[] = [];
  page.on('console', (message) => consoleLines.push(`${message.type()}: ${message.text()}`));
  const collectRequests: Request[] = [];
  context.on('request', (request) => {
    if (request.url() === `${sitePage.host}/collect` && request.method() === 'POST')
      collectRequests.push(request);
  });
  return { context, page, consoleLines, collectRequests };
}

async function open(page: Page, pathAndQuery: string): Promise<void> {
  await page.goto(`${siteUrl}${pathAndQuery}`);
  await loaded(page);
}

const loaded = (page: Page) =>
  page.waitForFunction('window.analytics && window.analytics.initialized === true');
const anonymousIdOf = (page: Page) => page.evaluate('analytics.debugState().anonymousId') as Promise<string>;

const batchOf = (request: Request) =>
  (JSON.parse(request.postData() ?? '{}') as { batch: { messageId: string; event?: string; type: string }[] })
    .batch;

describe('browser SDK against static mode: snippet, /v1/sdk.js and /collect into the warehouse', () => {
  let db: ScratchDatabase;
  let writer: WarehouseWriter;
  let client: Client;
  let ingestion: Server;
  let ingestionUrl: string;
  /** The POST /collect requests ingestion received, as the server saw them (beacons included). */
  const received: { contentType?: string; writeKeyHeader?: string | string[] }[] = [];

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'sdk browser');
    writer = new WarehouseWriter(db.url);
    await writer.ensureSchema('tracking');
    client = new Client({ connectionString: db.url });
    await client.connect();
    const app = staticApp(writer, { writeKey: WRITE_KEY, sdk: loadSdkFile(SDK_PATH, logger) });
    ingestion = createServer((req, res) => {
      if (req.method === 'POST' && req.url === '/collect') {
        received.push({
          contentType: req.headers['content-type'],
          writeKeyHeader: req.headers['x-write-key'],
        });
      }
      app(req, res);
    });
    ingestionUrl = await listen(ingestion);
  });

  afterAll(async () => {
    await close(ingestion);
    await client?.end();
    await writer?.close();
    await db?.drop();
  });

  /** The rows of a visitor, waiting until at least `count` have arrived. */
  const rowsOf = (table: string, anonymousId: string, count: number) =>
    until(
      async () =>
        (
          await client.query<Row>(
            `SELECT * FROM tracking.${table} WHERE anonymous_id = $1 ORDER BY original_timestamp, received_at`,
            [anonymousId],
          )
        ).rows,
      (rows) => rows.length >= count,
    );

  it('replays the calls made before load in order, adds the context, and persists the visitor across pages', async () => {
    const userId = `user-${randomUUID()}`;
    sitePage = {
      host: ingestionUrl,
      writeKey: WRITE_KEY,
      settings: 'a.flushInterval=200',
      beforeLoad: `
        window.readySeen = [];
        analytics.identify(${JSON.stringify(userId)}, { plan: 'pro' });
        analytics.track('Before Load', { step: 1 });
        analytics.ready(function () { readySeen.push('callback'); }).then(function () { readySeen.push('promise'); });
        analytics.setConsent({ analytics: false });`,
    };
    const { context, page, consoleLines } = await visitor();
    await open(page, '/landing?utm_source=news&utm_medium=email&utm_campaign=spring&gclid=abc123&q=1#top');
    await page.evaluate(`(async () => {
      analytics.track('After Load', { step: 2 });
      analytics.group('acme-${userId}', { seats: 3 });
      analytics.alias('${userId}-2');
      await analytics.ready();
      await analytics.flush();
    })()`);
    expect(await page.evaluate('readySeen')).toEqual(['callback', 'promise']);
    expect(consoleLines).toContain(
      'warning: analytics.setConsent is available only after the SDK has loaded',
    );
    const anonymousId = await anonymousIdOf(page);

    sitePage = { host: ingestionUrl, writeKey: WRITE_KEY, settings: 'a.flushInterval=200' };
    await page.click('a');
    await page.waitForURL(`${siteUrl}/next`);
    await loaded(page);
    await page.evaluate('analytics.flush()');

    const events = await rowsOf('events', anonymousId, 4);
    expect(events.map((r) => [r.type, r.event ?? r.name, r.context_page_path])).toEqual([
      ['page', null, '/landing'],
      ['track', 'Before Load', '/landing'],
      ['track', 'After Load', '/landing'],
      ['page', null, '/next'],
    ]);
    const [landing, before, , next] = events as [Row, Row, Row, Row];
    expect(landing).toMatchObject({
      message_id: expect.stringMatching(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      ),
      user_id: null,
      context_source: 'web',
      context_library_name: 'pipeline-web-tracking',
      context_library_version: '0.1.0',
      context_page_url: `${siteUrl}/landing?utm_source=news&utm_medium=email&utm_campaign=spring&gclid=abc123&q=1`,
      context_page_title: 'Shop /landing',
      context_page_referrer: null,
      context_campaign_source: 'news',
      context_campaign_medium: 'email',
      context_campaign_name: 'spring',
      context_click_ids: { gclid: 'abc123' },
      context_browser: expect.stringMatching(/^Chrome( Headless)? \d+$/),
      context_os: 'Linux',
      context_device: 'desktop',
      context_language: 'en',
      context_locale: 'en-US',
      context_user_agent: expect.stringContaining('Chrome/'),
      properties: expect.objectContaining({
        path: '/landing',
        search: expect.stringContaining('utm_source=news'),
      }),
    });
    expect(landing.context_screen_width).toBeGreaterThan(0);
    expect(landing.context_extra).toMatchObject({ timezone: expect.any(String) });
    expect(landing.sent_at).toBeInstanceOf(Date);
    // Identified before the first track; the page view queued by the snippet came before it.
    expect(before).toMatchObject({ user_id: userId, properties: { step: 1 } });
    // The next page: same visitor and session, the landing's campaign kept (last touch), and a referrer.
    expect(next).toMatchObject({
      user_id: userId,
      session_id: landing.session_id,
      context_campaign_source: 'news',
      context_click_ids: { gclid: 'abc123' },
      context_page_referrer: `${siteUrl}/landing?utm_source=news&utm_medium=email&utm_campaign=spring&gclid=abc123&q=1`,
    });
    expect(new Set(events.map((r) => r.session_id)).size).toBe(1);
    expect(events.every((r) => (r.original_timestamp as Date) <= (r.received_at as Date))).toBe(true);

    expect(await rowsOf('users', anonymousId, 1)).toEqual([
      expect.objectContaining({ user_id: userId, traits: { plan: 'pro' } }),
    ]);
    expect(await rowsOf('groups', anonymousId, 1)).toEqual([
      expect.objectContaining({ group_id: `acme-${userId}`, user_id: userId, traits: { seats: 3 } }),
    ]);
    expect(await rowsOf('aliases', anonymousId, 1)).toEqual([
      expect.objectContaining({ user_id: `${userId}-2`, previous_id: userId }),
    ]);
    await context.close();
  });

  it('sends a batch when batchSize events wait, and the rest with sendBeacon (text/plain) when the page is left', async () => {
    sitePage = { host: ingestionUrl, writeKey: WRITE_KEY, settings: 'a.batchSize=3;a.flushInterval=60000' };
    const { context, page, collectRequests } = await visitor();
    await open(page, '/');
    await page.evaluate(`analytics.track('A'); analytics.track('B')`);
    await until(
      () => collectRequests.length,
      (n) => n >= 1,
    );
    expect(collectRequests).toHaveLength(1);
    const first = collectRequests[0]!;
    expect(batchOf(first).map((e) => e.event ?? e.type)).toEqual(['page', 'A', 'B']);
    expect(await first.allHeaders()).toMatchObject({
      'content-type': 'application/json',
      'x-write-key': WRITE_KEY,
    });
    expect(JSON.parse(first.postData()!)).toMatchObject({ writeKey: WRITE_KEY, sentAt: expect.any(String) });

    // C and D are tracked once the first batch has been answered: while a request is in
    // flight, what is queued behind it goes in the next request as soon as it returns (fetch,
    // not a beacon), which a loaded machine showed twice. The list (shared by the file's tests)
    // is cleared then, so whatever sends C and D is counted.
    await until(
      () => page.evaluate('analytics.debugState().queue') as Promise<{ queued: number; inFlight: number }>,
      (queue) => queue.queued === 0 && queue.inFlight === 0,
    );
    received.length = 0;
    await page.evaluate(`analytics.track('C'); analytics.track('D')`);
    const anonymousId = await anonymousIdOf(page);
    await page.goto('about:blank');
    const events = await rowsOf('events', anonymousId, 5);
    expect(events.map((r) => r.event ?? r.type)).toEqual(['page', 'A', 'B', 'C', 'D']);
    // C and D went in one request after the page was left: a beacon, so text/plain and the
    // key in the body only (a beacon cannot set headers).
    const [, , , c, d] = events as Row[];
    expect(c!.sent_at).toEqual(d!.sent_at);
    expect(c!.sent_at).not.toEqual(events[0]!.sent_at);
    expect(received).toEqual([{ contentType: 'text/plain;charset=UTF-8', writeKeyHeader: undefined }]);
    expect(collectRequests).toHaveLength(1);
    await context.close();
  });

  it('retries 429 and 503 no sooner than their Retry-After (header or body), and a network failure with backoff', async () => {
    sitePage = {
      host: ingestionUrl,
      writeKey: WRITE_KEY,
      settings: 'a.flushInterval=100',
      beforeLoad: `analytics.track('Retried')`,
    };
    const { context, page } = await visitor();
    const attempts: { messageIds: string[]; sentAt: number }[] = [];
    const cors = { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'Retry-After' };
    await context.route(`${ingestionUrl}/collect`, async (route: Route) => {
      const request = route.request();
      if (request.method() !== 'POST') return route.continue();
      const body = JSON.parse(request.postData() ?? '{}') as {
        sentAt: string;
        batch: { messageId: string }[];
      };
      attempts.push({ messageIds: body.batch.map((e) => e.messageId), sentAt: Date.parse(body.sentAt) });
      if (attempts.length === 1) {
        // Only the header says when.
        return route.fulfill({
          status: 429,
          headers: { ...cors, 'Retry-After': '2' },
          json: { ok: false, error: 'rate_limit_exceeded', limitType: 'second' },
        });
      }
      if (attempts.length === 2) {
        // Only the body says when: some 503s carry no header (docs/tracking-api.md#errors).
        return route.fulfill({
          status: 503,
          headers: cors,
          json: {
            ok: false,
            error: 'durable_ingress_unavailable',
            reason: 'outbox_unavailable',
            retryAfter: 3,
          },
        });
      }
      if (attempts.length === 3) return route.abort('connectionrefused');
      return route.continue();
    });
    await open(page, '/');
    const anonymousId = await anonymousIdOf(page);
    const events = await rowsOf('events', anonymousId, 2);
    expect(events.map((r) => r.event ?? r.type)).toEqual(['page', 'Retried']);
    expect(attempts).toHaveLength(4);
    expect(new Set(attempts.map((a) => a.messageIds.join())).size).toBe(1);
    // Measured by the browser's own clock (sentAt of each attempt). Backoff alone would have
    // waited under 1 s after the first failure and under 2 s after the second.
    const gaps = attempts.slice(1).map((a, i) => a.sentAt - attempts[i]!.sentAt);
    expect(gaps[0]).toBeGreaterThanOrEqual(2000); // Retry-After: 2
    expect(gaps[1]).toBeGreaterThanOrEqual(3000); // retryAfter: 3 in the body
    expect(gaps[2]).toBeGreaterThanOrEqual(2000); // the third failure's backoff: 2-4 s
    expect((events[1]!.sent_at as Date).getTime()).toBe(attempts[3]!.sentAt);
    await context.close();
  });

  it('keeps the queue through a reload while the host asks to wait, and sends it from the next page load', async () => {
    sitePage = { host: ingestionUrl, writeKey: WRITE_KEY, settings: 'a.flushInterval=100' };
    const { context, page } = await visitor();
    received.length = 0;
    let refusing = true;
    const refusedAt: number[] = [];
    await context.route(`${ingestionUrl}/collect`, async (route) => {
      if (route.request().method() !== 'POST' || !refusing) return route.continue();
      refusedAt.push(Date.now());
      return route.fulfill({
        status: 503,
        headers: { 'Access-Control-Allow-Origin': '*', 'Access-Control-Expose-Headers': 'Retry-After' },
        json: { ok: false, error: 'delivery_unavailable', reason: 'no_destination_ready', retryAfter: 3 },
      });
    });
    await open(page, '/');
    await page.evaluate(`analytics.track('Pending 1'); analytics.track('Pending 2')`);
    await until(
      () => refusedAt.length,
      (n) => n > 0,
    );
    const stored = (await page.evaluate(`Object.keys(localStorage)
      .filter((k) => /^pipeline\\.queue\\.[^.]+$/.test(k))
      .flatMap((k) => JSON.parse(localStorage.getItem(k)).events.map((e) => e.event || e.type))`)) as string[];
    expect(stored).toEqual(['page', 'Pending 1', 'Pending 2']);
    const anonymousId = await anonymousIdOf(page);

    // From here ingestion answers: a beacon sent on unload would now arrive, and be counted.
    refusing = false;
    await page.reload();
    await loaded(page);
    const events = await rowsOf('events', anonymousId, 4);
    expect(events.map((r) => r.event ?? r.type)).toEqual(['page', 'Pending 1', 'Pending 2', 'page']);
    // Nothing went out with the unload: one refused request, then one that reached ingestion
    // from the next page, which waited for the host's retryAfter first.
    expect(refusedAt).toHaveLength(1);
    expect(received).toHaveLength(1);
    expect((events[1]!.received_at as Date).getTime() - refusedAt[0]!).toBeGreaterThanOrEqual(2900);
    await context.close();
  });

  it('drops a batch the host refuses for good (401), with console.error, and keeps nothing', async () => {
    sitePage = { host: ingestionUrl, writeKey: 'not-the-key', settings: 'a.flushInterval=100' };
    const { context, page, consoleLines } = await visitor();
    await open(page, '/');
    const error = await until(
      () => consoleLines.find((line) => line.includes('[analytics]')),
      (line) => line !== undefined,
    );
    expect(error).toMatch(
      /^error: \[analytics\] the tracking host refused 1 events \(401 invalid_write_key\); they are dropped/,
    );
    expect(await page.evaluate('analytics.debugState().queue')).toEqual({
      queued: 0,
      inFlight: 0,
      attempts: 0,
      retryAt: null,
    });
    await context.close();
  });

  it('stamps the consent in force at send time, keeps it across page loads, and shows it in debugState', async () => {
    sitePage = { host: ingestionUrl, writeKey: WRITE_KEY, settings: 'a.flushInterval=60000' };
    const { context, page } = await visitor();
    await open(page, '/');
    await page.evaluate(`(async () => {
      analytics.setConsent({ analytics: true, marketing: true });
      analytics.track('Consent Changed Before Sending');
      analytics.setConsent({ marketing: false });
      await analytics.flush();
    })()`);
    const anonymousId = await anonymousIdOf(page);
    let events = await rowsOf('events', anonymousId, 2);
    expect(events.map((r) => r.context_consent)).toEqual([
      { analytics: true, marketing: false },
      { analytics: true, marketing: false },
    ]);

    await page.reload();
    await loaded(page);
    expect(await page.evaluate('analytics.getConsent()')).toEqual({ analytics: true, marketing: false });
    expect(await page.evaluate('analytics.debugState()')).toMatchObject({
      anonymousId,
      consent: { analytics: true, marketing: false },
      storage: 'localStorage',
      settings: { batchSize: 20, flushIntervalMs: 60000 },
    });
    await page.evaluate('analytics.flush()');
    events = await rowsOf('events', anonymousId, 3);
    expect(events[2]).toMatchObject({ type: 'page', context_consent: { analytics: true, marketing: false } });
    await context.close();
  });
});

describe('browser SDK against hosted mode: a real 429, then 202 once in Kafka', () => {
  let h: Hosted;
  let ingestion: Server;
  let ingestionUrl: string;
  /** A write key limited to 5 events per second: a batch of 10 is refused whenever it comes. */
  let slowKey: string;

  beforeAll(async () => {
    h = await startHosted('sdk browser');
    slowKey = (
      await h.controlPlane
        .as(h.apiKey)
        .post('/api/v1/write-keys')
        .send({ name: 'slow site', rateLimits: { eventsPerSecond: 5, eventsPerDay: null } })
    ).body.data.key;
    ingestion = createServer(
      createApp({
        logger,
        collect: h.collectService,
        health: new StaticHealth(),
        sdk: loadSdkFile(SDK_PATH, logger),
        simulate: { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
        clientAddress: () => null,
      }),
    );
    ingestionUrl = await listen(ingestion);
  });

  afterAll(async () => {
    await close(ingestion);
    await h?.close();
  });

  it("retries the limit's 429 after its Retry-After with the same events, and commits each event once", async () => {
    sitePage = {
      host: ingestionUrl,
      writeKey: slowKey,
      settings: 'a.batchSize=10;a.flushInterval=100',
      beforeLoad: `for (var i = 1; i <= 9; i++) analytics.track('Burst ' + i, { i: i });`,
    };
    const { context, page } = await visitor();
    const answers: { status: number; sentAt: number; ids: string[]; body: Promise<unknown> }[] = [];
    context.on('response', (response) => {
      const request = response.request();
      if (response.url() === `${ingestionUrl}/collect` && request.method() === 'POST') {
        const { sentAt } = JSON.parse(request.postData() ?? '{}') as { sentAt: string };
        const ids = batchOf(request).map((e) => e.messageId);
        // Read now: a body still unread when the context closes would reject unhandled.
        answers.push({
          status: response.status(),
          sentAt: Date.parse(sentAt),
          ids,
          body: response.json().catch(() => null),
        });
      }
    });
    await open(page, '/');
    const anonymousId = await anonymousIdOf(page);
    await until(
      () => answers.length,
      (n) => n >= 2,
    );
    const [first, second] = answers as [(typeof answers)[0], (typeof answers)[0]];
    expect([first.status, second.status]).toEqual([429, 429]);
    expect(await first.body).toMatchObject({
      error: 'rate_limit_exceeded',
      limitType: 'second',
      retryAfter: 1,
    });
    expect(second.sentAt - first.sentAt).toBeGreaterThanOrEqual(1000);
    expect(second.ids).toEqual(first.ids);
    expect(first.ids).toHaveLength(10);

    // The site lowers its batch size under the key's limit; the queue survives the reload.
    sitePage = { ...sitePage, settings: 'a.batchSize=5;a.flushInterval=100', beforeLoad: '' };
    await page.reload();
    await loaded(page);
    await until(
      () => page.evaluate('analytics.debugState().queue') as Promise<{ queued: number; inFlight: number }>,
      (q) => q.queued === 0 && q.inFlight === 0,
    );
    const committed = (await h.readTopic(11)).filter((c) => c.event.anonymousId === anonymousId);
    const names = committed.map((c) => (c.event.type === 'track' ? c.event.event : c.event.type));
    expect(names.sort()).toEqual(
      ['page', 'page', ...Array.from({ length: 9 }, (_, i) => `Burst ${i + 1}`)].sort(),
    );
    expect(new Set(committed.map((c) => c.event.messageId)).size).toBe(11);
    expect(answers.filter((a) => a.status === 202).length).toBeGreaterThanOrEqual(3);
    await context.close();
  });

  it('opened as a page, /v1/snippet?host=<another site> runs nothing on the tracking origin', async () => {
    const requests: string[] = [];
    const foreign = createServer((req, res) => {
      requests.push(req.url ?? '');
      res.writeHead(200, { 'Content-Type': 'application/javascript' }).end('window.pwned = true;');
    });
    const foreignUrl = await listen(foreign);
    const { context, page } = await visitor();
    try {
      const query = new URLSearchParams({ writeKey: 'wk_x', host: foreignUrl });
      const response = await page.goto(`${ingestionUrl}/v1/snippet?${query}`, { waitUntil: 'load' });
      expect(response?.headers()['content-type']).toBe('text/plain; charset=utf-8');
      // Shown as text: the block is there to copy, and none of it ran.
      expect(await page.evaluate('document.body.innerText')).toContain(`a.host="${foreignUrl}"`);
      expect(await page.evaluate('typeof window.analytics')).toBe('undefined');
      expect(await page.evaluate('typeof window.pwned')).toBe('undefined');
      expect(requests).toEqual([]);
    } finally {
      await context.close();
      await close(foreign);
    }
  });
});

/** Reads until `done` holds or 15 s have passed, and returns the last value read. */
async function until<T>(read: () => T | Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function close(server: Server | undefined): Promise<void> {
  if (!server) return;
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
