import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../testing/chromium';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { PassThrough } from 'node:stream';
import { JobEntity } from '../jobs/job.entity';
import { TaskWorker } from '../tasks/task-worker';
import { SourceEntity } from '../sources/source.entity';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { CONSOLE_CSP, consoleDirectory } from './console-files';

// The console (apps/console) as a browser sees it: served by the real control plane on a real
// port, driven by headless Chromium through sign-in, the overview, a failed job, write keys,
// usage and tasks, each page saved as a screenshot in .reports/console/.

const INGESTION_SNIPPET = path.resolve(__dirname, '../../../ingestion/dist/sdk/snippet.js');
const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');

let h: Harness;
let t: Tenant;
let server: Server;
let base: string;
let browser: Browser;
let sourceId: string;
let jobId: string;
/** Read just before the usage days are stored. */
let usageSeededAt: number;

/** A new tab signed in with `key` through the sign-in form. */
async function signedIn(key: string, hash = '#/'): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  // Generous: CI runs this beside other suites on two cores.
  page.setDefaultTimeout(30_000);
  openPages.add(page);
  page.on('close', () => openPages.delete(page));
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
  (page as Page & { problems?: string[] }).problems = problems;
  await page.goto(`${base}/console/${hash}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return page;
}

/** Pages a test opened and did not close: it failed before its end. */
const openPages = new Set<Page>();

afterEach(async () => {
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').slice(-60);
  for (const page of openPages) {
    // What the failed test saw: a screenshot, the page's text and its errors.
    await page
      .screenshot({ path: path.join(SCREENSHOTS, `failed-${name}.png`), fullPage: true })
      .catch(() => {});
    const text = await page
      .locator('body')
      .innerText({ timeout: 2_000 })
      .catch(() => '(no text)');
    // The control plane's own account of an error the page shows (a 500 says no more).
    const serverErrors = h.logs.filter((line) => /"level":"(error|warn)"/.test(line)).slice(-5);
    process.stderr.write(
      `${name}: ${page.url()}\n${text.slice(0, 2_000)}\nerrors: ${problemsOf(page).join(' | ')}\nserver: ${serverErrors.join('')}\n`,
    );
    await page.close();
  }
});

const problemsOf = (page: Page) => (page as Page & { problems?: string[] }).problems ?? [];

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  h = await startHarness('console browser');
  t = await h.tenant(['automations']);
  const api = h.as(t.key);
  const stripe = await api
    .post('/api/v1/apps')
    .send({ appType: 'stripe', displayName: 'Stripe live', credentials: { secretKey: 'sk_test_console' } });
  expect(stripe.status).toBe(201);
  const source = await api
    .post('/api/v1/sources')
    .send({ appId: stripe.body.data.id, syncType: 'stripe', importTasks: ['customers'] });
  expect(source.status).toBe(201);
  sourceId = source.body.data.id;
  const sync = await api.post(`/api/v1/sources/${sourceId}/sync`);
  expect(sync.status).toBe(202);
  jobId = sync.body.data.id;
  // A sync that failed twice: the job's error, and the source's last error as the runner leaves it.
  const failedAt = new Date('2026-11-20T08:30:00Z');
  await h.db.dataSource.getRepository(JobEntity).update(
    { id: jobId },
    {
      status: 'failed',
      attempts: 2,
      rowsRead: 120,
      rowsWritten: 80,
      startedAt: new Date(failedAt.getTime() - 5000),
      finishedAt: failedAt,
      error: { code: 'vendor_unauthorized', message: 'Stripe: invalid API key provided' },
    },
  );
  await h.db.dataSource.getRepository(SourceEntity).update(
    { id: sourceId },
    {
      integrationStatus: 'errored' as SourceEntity['integrationStatus'],
      consecutiveFailures: 2,
      lastError: {
        code: 'vendor_unauthorized',
        message: 'Stripe: invalid API key provided',
        at: failedAt.toISOString(),
      },
    },
  );
  const key = await api.post('/api/v1/write-keys').send({ name: 'website', allowedOrigins: ['localhost'] });
  expect(key.status).toBe(201);
  // Fourteen metered days before today, for the usage chart.
  usageSeededAt = Date.now();
  for (let i = 14; i >= 1; i -= 1) {
    const day = new Date(Date.now() - i * 86_400_000).toISOString().slice(0, 10);
    await h.db.dataSource.query(
      `INSERT INTO usage_daily (account_id, day, storage_bytes, query_bytes, model_query_bytes, compute_ms,
         model_compute_ms, sync_rows, tracking_rows, storage_cost_usd, query_cost_usd, model_query_cost_usd,
         compute_cost_usd, model_compute_cost_usd, sync_rows_cost_usd)
       VALUES ($1, $2, 1000000000, 0, 0, 60000, 0, $3, 0, $4, $5, 0, $6, 0, $7)`,
      [t.accountId, day, 1000 * i, 0.02 + i * 0.001, 0.01 * (i % 4), 0.005 * (i % 3), 0.001 * i],
    );
  }
  server = createServer(h.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
});

describe('serving /console', () => {
  it('redirects /console to /console/ and serves index.html uncached with the strict CSP', async () => {
    const redirect = await request(h.app).get('/console');
    expect(redirect.status).toBe(301);
    expect(redirect.headers.location).toBe('/console/');
    const index = await request(h.app).get('/console/');
    expect(index.status).toBe(200);
    expect(index.headers['content-type']).toMatch(/^text\/html/);
    expect(index.headers['cache-control']).toBe('no-cache');
    expect(index.headers['content-security-policy']).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(index.headers['x-content-type-options']).toBe('nosniff');
    // No inline script or style: every script and stylesheet is a file of the console.
    expect(index.text).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(index.text).not.toMatch(/<style|style=/);
    const assets = [...index.text.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1]);
    expect(assets).toHaveLength(2);
    for (const asset of assets) {
      const response = await request(h.app).get(`/console/${asset}`);
      expect(response.status).toBe(200);
      expect(response.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(response.headers['content-security-policy']).toBe(CONSOLE_CSP);
    }
    expect((await request(h.app).get('/console/missing.js')).status).toBe(404);
  });
});

describe('the console in Chromium', () => {
  it('shows a warehouse that refuses the consumer, with what it met', async () => {
    const other = await h.tenant();
    const placed = await h.services.placements.resolve(other.accountId);
    await h.services.warehouses.reportStatus(
      placed.placement.warehouseId,
      'misconfigured',
      '28P01 password authentication failed for user "loader"',
    );
    try {
      const page = await signedIn(other.key);
      const warehouse = page.locator('section[aria-labelledby="warehouse-heading"]');
      await warehouse.locator('.badge.bad', { hasText: 'misconfigured' }).waitFor();
      // A platform warehouse: the fixed text, never the driver's (review of 2026-11-29, #6).
      await expect(warehouse.innerText()).resolves.toContain('refuses its connection');
      await expect(warehouse.innerText()).resolves.not.toContain('28P01');
      await expect(warehouse.innerText()).resolves.not.toContain('loader');
      await expect(warehouse.innerText()).resolves.toContain('none lost');
      await shot(page, '02b-overview-warehouse-misconfigured');
      await page.close();
    } finally {
      await h.services.warehouses.reportStatus(placed.placement.warehouseId, 'active');
    }
  });

  it('shows a warehouse whose password the keys cannot open, and what fixes it', async () => {
    const other = await h.tenant();
    const placed = await h.services.placements.resolve(other.accountId);
    const id = placed.placement.warehouseId;
    const [{ password_key_id: keyId }] = (await h.db.dataSource.query(
      'SELECT password_key_id FROM warehouses WHERE id = $1',
      [id],
    )) as { password_key_id: string }[];
    // Sealed, as far as this control plane can tell, by a key it does not hold.
    await h.db.dataSource.query("UPDATE warehouses SET password_key_id = 'gone' WHERE id = $1", [id]);
    try {
      const found = await h.services.warehouses.auditSeals();
      expect(found.filter((f) => f.keyId === 'gone')).toEqual([
        { warehouse: expect.any(String), keyId: 'gone', reason: 'key_missing' },
      ]);
      const page = await signedIn(other.key);
      const warehouse = page.locator('section[aria-labelledby="warehouse-heading"]');
      await warehouse.locator('.badge.bad', { hasText: 'misconfigured' }).waitFor();
      await expect(warehouse.innerText()).resolves.toContain(
        'credentials_unreadable: the service cannot open this warehouse’s stored password',
      );
      await expect(warehouse.innerText()).resolves.toContain('restore the key it was sealed with');
      await expect(warehouse.innerText()).resolves.not.toContain('key gone');
      await shot(page, '02c-overview-warehouse-credentials-unreadable');
      await page.close();
    } finally {
      await h.db.dataSource.query('UPDATE warehouses SET password_key_id = $2 WHERE id = $1', [id, keyId]);
    }
    // The key back: the next audit (a start) sets it active again.
    await h.services.warehouses.auditSeals();
    const view = await h.as(other.key).get('/api/v1/warehouse');
    expect([view.body.data.status, view.body.data.statusDetail]).toEqual(['active', null]);
  });

  it('signs in, shows the source with its last error, and opens its failed job', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${base}/console/`);
    await page.getByLabel('API key').waitFor();
    await shot(page, '01-sign-in');
    await page.close();

    const signed = await signedIn(t.key);
    // The key is in sessionStorage, never in the URL or a cookie.
    expect(signed.url()).not.toContain(t.key);
    expect(await signed.context().cookies()).toEqual([]);
    expect(await signed.evaluate("sessionStorage.getItem('pipeline.console.apiKey')")).toBe(t.key);
    const row = signed.locator(`tr[data-source-id="${sourceId}"]`);
    await row.waitFor();
    await expect(row.innerText()).resolves.toContain('vendor_unauthorized: Stripe: invalid API key provided');
    await expect(row.innerText()).resolves.toContain('errored');
    await expect(row.innerText()).resolves.toContain('2 failures in a row');
    // Where to fix it: the source's page and its app, and Sync now; no API call to type.
    await expect(row.innerText()).resolves.not.toContain('/api/v1/');
    expect(await row.getByRole('link', { name: "the source's page" }).getAttribute('href')).toBe(
      `#/sources/${sourceId}`,
    );
    await row.getByRole('button', { name: 'Sync Stripe live now' }).waitFor();
    await signed.getByRole('heading', { name: 'Apps' }).waitFor();
    await signed.getByText('Stripe live').first().waitFor();
    // The account's warehouse: where its data is, and that loading works.
    const warehouse = signed.locator('section[aria-labelledby="warehouse-heading"]');
    await warehouse.locator('.badge', { hasText: 'active' }).waitFor();
    await expect(warehouse.innerText()).resolves.toContain(warehouseSchemaFor(t.accountId));
    await shot(signed, '02-overview');

    await row.getByRole('link', { name: 'Jobs of Stripe live' }).click();
    await signed.getByRole('heading', { name: 'Jobs of source' }).waitFor();
    const jobLink = signed.getByRole('link', { name: jobId.slice(0, 8) });
    await jobLink.waitFor();
    await shot(signed, '03-jobs');
    // Keyboard: focus the job's link and follow it with Enter.
    await jobLink.focus();
    await signed.keyboard.press('Enter');
    await signed.getByRole('heading', { name: 'Job', exact: true }).waitFor();
    const facts = await signed.locator('dl.facts').innerText();
    expect(facts).toContain(jobId);
    expect(facts).toMatch(/Status\s+failed/);
    expect(facts).toMatch(/Attempts\s+2/);
    expect(facts).toMatch(/Rows read\s+120/);
    expect(facts).toMatch(/Rows written\s+80/);
    const error = JSON.parse(await signed.getByLabel("The job's error").innerText()) as unknown;
    expect(error).toEqual({ code: 'vendor_unauthorized', message: 'Stripe: invalid API key provided' });
    await shot(signed, '04-job');
    expect(problemsOf(signed)).toEqual([]);
    await signed.close();
  });

  it('refuses a wrong key at sign-in and returns to sign-in when the key stops working', async () => {
    const page = await browser.newPage();
    await page.goto(`${base}/console/`);
    await page.getByLabel('API key').fill('pk_not_a_key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'This API key was not accepted' }).waitFor();
    await page.close();

    // Another account, whose keys are all revoked while the console is open.
    const other = await h.tenant();
    const signed = await signedIn(other.key);
    await signed.getByText('No sources yet.').waitFor();
    await h.db.dataSource.query('UPDATE api_keys SET revoked_at = now() WHERE account_id = $1', [
      other.accountId,
    ]);
    // The next call answers 401; the Overview's own refresh may get there first and take the
    // page (and its links) away, so go to another page by its address rather than by a click.
    await signed.evaluate("location.hash = '#/usage'");
    await signed.getByRole('alert').filter({ hasText: 'not accepted any more' }).waitFor();
    await signed.getByLabel('API key').waitFor();
    expect(await signed.evaluate("sessionStorage.getItem('pipeline.console.apiKey')")).toBeNull();
    await signed.close();
  });

  it('tells a key without write_keys.read that it is not allowed, on that page only', async () => {
    const key = await t.keyWith(['apps.read', 'sources.read', 'integrations.read']);
    const page = await signedIn(key, '#/write-keys');
    const notice = page.getByRole('alert');
    await notice.waitFor();
    expect(await notice.innerText()).toBe(
      'This API key is not allowed to read write keys (it needs the scope write_keys.read). Sign in with a key that has it, or ask for one.',
    );
    // The rest of the console still works with this key.
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.locator(`tr[data-source-id="${sourceId}"]`).waitFor();
    await page.getByRole('link', { name: 'Write keys' }).click();
    await notice.waitFor();
    await shot(page, '05-write-keys-not-allowed');
    await page.close();
  });

  it('lists write keys and fills the snippet in the page, as ingestion renders it', async () => {
    const page = await signedIn(t.key, '#/write-keys');
    const link = page.getByRole('link', { name: 'website' });
    await link.waitFor();
    await shot(page, '06-write-keys');
    await link.click();
    await page.getByRole('heading', { name: 'Write key “website”' }).waitFor();
    const snippet = page.getByLabel("The snippet for the page's head");
    await expect(snippet.innerText()).resolves.toContain('a.writeKey="YOUR_WRITE_KEY"');
    await page.getByLabel('Write key', { exact: true }).fill('wk_live_example');
    await page.getByLabel('Ingestion URL').fill('https://t.example.com');
    // The same block as ingestion's GET /v1/snippet (its built module: the console keeps a copy).
    const ingestion = (await import(INGESTION_SNIPPET)) as {
      renderSnippet(key: string, host: string): string;
    };
    expect((await snippet.innerText()).trim()).toBe(
      ingestion.renderSnippet('wk_live_example', 'https://t.example.com').trim(),
    );
    await shot(page, '07-write-key');
    await page.close();
  });

  it('draws the daily usage as a chart', async () => {
    const page = await signedIn(t.key, '#/usage');
    await page.locator('.uplot canvas').waitFor();
    const caption = await page.locator('figcaption').innerText();
    expect(caption).toMatch(/over 30 days/);
    // 14 seeded days: 1000 * (1 + ... + 14) rows synced.
    expect(caption).toContain(`${(105_000).toLocaleString('en-US')} rows synced`);
    const readAt = Date.now();
    // As of when the seeded days were stored: not before the minute they were, nor after now.
    const asOf = /As of (\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC/.exec(caption)?.[1];
    const asOfMs = Date.parse(`${asOf?.replace(' ', 'T')}:00Z`);
    expect(asOfMs).toBeGreaterThanOrEqual(usageSeededAt - (usageSeededAt % 60_000));
    expect(asOfMs).toBeLessThanOrEqual(readAt);
    const legend = await page.locator('.u-legend').innerText();
    for (const label of ['Total', 'Storage', 'Queries', 'Synced rows', 'Compute'])
      expect(legend).toContain(label);
    await shot(page, '08-usage');
    await page.close();
  });

  it('prechecks a template, starts a task and cancels its run', async () => {
    const page = await signedIn(t.key, '#/tasks');
    const card = page.locator('li.card').filter({ hasText: 'warehouse_freshness_check' });
    await card.waitFor();
    expect(await page.locator('li.card').count()).toBe(3);
    await card.getByRole('button', { name: 'Check prerequisites' }).click();
    const gaps = card.getByRole('list', { name: 'What is missing' });
    await gaps.waitFor();
    expect(await gaps.innerText()).toContain('missing_integration');
    await shot(page, '09-tasks');
    await card.getByRole('button', { name: 'Start a task' }).click();
    await page.getByRole('heading', { name: 'Run 1' }).waitFor();
    expect(await page.getByRole('region', { name: 'Run 1' }).innerText()).toContain('pending');
    await page.getByRole('button', { name: 'Cancel the run' }).click();
    await page
      .getByRole('region', { name: 'Run 1' })
      .getByRole('heading', { name: 'Run 1' })
      .locator('.badge', { hasText: 'cancelled' })
      .waitFor();
    await page.getByRole('button', { name: 'Start a run' }).waitFor({ state: 'visible' });
    expect(await page.getByRole('button', { name: 'Start a run' }).isEnabled()).toBe(true);
    await shot(page, '10-task');
    await page.getByRole('link', { name: '← Tasks' }).click();
    await page.getByRole('link', { name: 'Warehouse data freshness check' }).first().waitFor();
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  it('runs a connector health audit and shows its report', async () => {
    // The harness's own warehouse, which the app's precheck reads too.
    const worker = new TaskWorker({
      dataSource: h.db.dataSource,
      warehouse: h.warehouse,
      logger: createLogger({ service: 'test', stream: new PassThrough() }),
      concurrency: 1,
      pollIntervalMs: 50,
      heartbeatIntervalMs: 200,
      staleAfterMs: 60_000,
      maxAttempts: 1,
    });
    worker.start();
    try {
      const page = await signedIn(t.key, '#/tasks');
      const card = page.locator('li.card').filter({ hasText: 'connector_health_audit' });
      await card.getByRole('button', { name: 'Start a task' }).click();
      const run = page.getByRole('region', { name: 'Run 1' });
      // The run's own badge, in its heading: its steps have badges of their own.
      await run.getByRole('heading', { name: 'Run 1' }).locator('.badge', { hasText: 'succeeded' }).waitFor();
      await run.getByRole('heading', { name: 'Report' }).waitFor();
      // The failing source is a finding of the report, with its fix.
      const findings = await run.locator('ul.findings').innerText();
      expect(findings).toContain('sync_error');
      expect(findings).toContain('Stripe: invalid API key provided');
      // Its fix is a step in the console, not an API call to type.
      expect(findings).not.toContain('/api/v1/');
      const finding = run.locator('li.finding', { hasText: 'sync_error' });
      expect(await finding.getByRole('link', { name: 'Open stripe source' }).getAttribute('href')).toBe(
        `#/sources/${sourceId}`,
      );
      await finding.getByRole('button', { name: 'Sync stripe source now' }).waitFor();
      await shot(page, '11-task-report');
      expect(problemsOf(page)).toEqual([]);
      await page.close();
    } finally {
      await worker.stop();
    }
  });
});
