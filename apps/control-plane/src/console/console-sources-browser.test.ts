import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { type Browser, type Locator, type Page } from 'playwright-core';
import {
  startHoldingProxy,
  startStripeLookAlike,
  stripeRecords,
  type HoldingProxy,
  type SourceLookAlike,
} from '@pipeline/connectors/testing';
import {
  lookAlikeCredentials,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { CredentialCipher } from '../apps/credential-cipher';
import { IntegrationRunExecutor } from '../integrations/integration-run-executor';
import { JobRunner } from '../jobs/job-runner';
import { SourceSyncExecutor } from '../sources/source-sync-executor';
import { launchChromium } from '../testing/chromium';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { consoleDirectory } from './console-files';

// The console's Sources and Integrations pages in headless Chromium, against the real control
// plane on a real port, its real job runner, a Stripe look-alike (behind a proxy that can hold
// a sync mid-stream) and an Amplitude look-alike: a source created and synced in the page
// shows the look-alike's record count, is paused and resumed; an integration to Amplitude made
// in the page runs and shows the rows Amplitude received; a running sync is cancelled from the
// page. Screenshots in .reports/console/.

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');
const CUSTOMERS = 37;

let h: Harness;
let t: Tenant;
let server: Server;
let base: string;
let browser: Browser;
let stripe: SourceLookAlike;
let proxy: HoldingProxy;
let amplitude: LookAlikeServer;
let runner: JobRunner;
let warehouse: ScratchWarehouse;
let stripeAppId: string;
let sourceId: string;
const openPages = new Set<Page>();

async function signedIn(key: string, hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(30_000);
  openPages.add(page);
  page.on('close', () => openPages.delete(page));
  await page.goto(`${base}/console/${hash}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return page;
}

const shot = (page: Page, name: string) =>
  page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

/** The newest job row of the page's jobs table. */
const newestJob = (page: Page): Locator => page.locator('table.jobs tbody tr').first();

afterEach(async () => {
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').slice(-60);
  for (const page of openPages) {
    await page
      .screenshot({ path: path.join(SCREENSHOTS, `failed-${name}.png`), fullPage: true })
      .catch(() => {});
    const text = await page
      .locator('body')
      .innerText({ timeout: 2_000 })
      .catch(() => '(no text)');
    const serverErrors = h.logs.filter((line) => /"level":"(error|warn)"/.test(line)).slice(-5);
    process.stderr.write(
      `${name}: ${page.url()}\n${text.slice(0, 2_000)}\nserver: ${serverErrors.join('')}\n`,
    );
    await page.close();
  }
});

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  warehouse = await startScratchWarehouse('console sources warehouse');
  h = await startHarness('console sources browser');
  t = await h.tenant();
  stripe = await startStripeLookAlike();
  stripe.data.set('customers', stripeRecords('customers', CUSTOMERS, Math.floor(Date.now() / 1000)));
  proxy = await startHoldingProxy(stripe.url, { holdAfter: Infinity });
  amplitude = await startLookAlikeVendor('amplitude');
  const logger = createLogger({ service: 'console-sources-test', stream: new PassThrough(), level: 'warn' });
  const cipher = new CredentialCipher(TEST_CREDENTIAL_KEYS);
  runner = new JobRunner({
    dataSource: h.db.dataSource,
    logger,
    concurrency: 2,
    pollIntervalMs: 50,
    heartbeatIntervalMs: 100,
    staleAfterMs: 10_000,
    maxAttempts: 2,
    retryBaseMs: 100,
    retryMaxMs: 500,
  })
    .register(
      new SourceSyncExecutor({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher,
        logger,
        baseUrls: { stripe: proxy.url },
        http: { attempts: 1 },
      }),
    )
    .register(
      new IntegrationRunExecutor({
        regulationOf: (accountId) => h.services.regulations.service.regulationOf(accountId),
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher,
        jobs: h.services.jobs,
        logger,
        baseUrls: { amplitude: amplitude.url },
        dependencyRetryMs: 200,
      }),
    );
  runner.start();
  const api = h.as(t.key);
  const app = await api
    .post('/api/v1/apps')
    .send({ appType: 'stripe', displayName: 'Stripe shop', credentials: { secretKey: stripe.secret } });
  expect(app.status).toBe(201);
  stripeAppId = app.body.data.id;
  const destination = await api
    .post('/api/v1/apps')
    .send({ appType: 'amplitude', displayName: 'Amplitude', credentials: lookAlikeCredentials.amplitude });
  expect(destination.status).toBe(201);
  server = createServer(h.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await runner?.stop();
  proxy?.release();
  await proxy?.close();
  await stripe?.close();
  await amplitude?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
  await warehouse?.drop();
});

describe('the Sources and Integrations pages in Chromium', () => {
  it('shows the API’s error at its field, then creates a Stripe source, syncs it and shows its rows', async () => {
    const page = await signedIn(t.key, '#/sources');
    await page.getByRole('heading', { name: 'New source' }).waitFor();
    const form = page.getByRole('form', { name: 'New source' });
    await expect(form.getByLabel('Source app').inputValue()).resolves.toBe(stripeAppId);
    // The Stripe app type's import tasks, all checked: keep customers only.
    const tasks = form.getByRole('group', { name: 'Import tasks' }).getByRole('checkbox');
    await expect(tasks.count()).resolves.toBe(4);
    for (const stream of ['charges', 'invoices', 'subscriptions'])
      await form.getByRole('checkbox', { name: new RegExp(`^${stream}`) }).uncheck();
    await form.getByLabel('Every').fill('6');
    await form.getByLabel('Unit').selectOption('hours');
    await form.getByLabel('Anchor time').fill('02:30');
    await form.getByLabel('Rolling window (hours)').fill('48');
    await form.getByRole('checkbox', { name: 'Run the first sync now' }).uncheck();
    // A zone the API refuses: its message appears under that field.
    await form.getByLabel('Time zone (IANA)').fill('Mars/Olympus_Mons');
    await form.getByRole('button', { name: 'Create source' }).click();
    const zoneError = form.locator('label', { hasText: 'Time zone (IANA)' }).locator('.field-error');
    await expect(zoneError.innerText()).resolves.toContain('must be an IANA time zone');
    await expect(form.getByLabel('Time zone (IANA)').getAttribute('aria-invalid')).resolves.toBe('true');
    await shot(page, '20-sources-field-error');

    await form.getByLabel('Time zone (IANA)').fill('Europe/Berlin');
    await form.getByRole('button', { name: 'Create source' }).click();
    await page.waitForURL(/#\/sources\/[0-9a-f-]{36}$/);
    sourceId = page.url().split('/').pop()!;
    const facts = page.locator('dl.facts');
    await expect(facts.innerText()).resolves.toContain(
      'every 6 hours at 02:30 Europe/Berlin, rolling window 2 days',
    );
    const created = await h.as(t.key).get(`/api/v1/sources/${sourceId}`);
    expect(created.body.data).toMatchObject({
      appId: stripeAppId,
      importTasks: ['customers'],
      syncFrequencyValue: 6,
      syncFrequencyUnit: 'hours',
      syncAnchorTime: '02:30',
      syncAnchorTimezone: 'Europe/Berlin',
      rollingPeriodDays: 2,
      latestJobId: null,
    });

    await page.getByRole('button', { name: 'Sync now' }).click();
    const row = newestJob(page);
    await row.locator('.badge', { hasText: 'succeeded' }).waitFor();
    await expect(row.locator('[data-field="rowsRead"]').innerText()).resolves.toBe(String(CUSTOMERS));
    await expect(row.locator('[data-field="rowsWritten"]').innerText()).resolves.toBe(String(CUSTOMERS));
    const loaded = await warehouse.query<{ rows: string }>(
      `SELECT count(*) AS rows FROM ${warehouseSchemaFor(t.accountId)}.stripe_customers`,
    );
    expect(loaded.rows[0]?.rows).toBe(String(stripe.data.get('customers')!.length));
    await page.locator('[data-field="integrationStatus"] .badge', { hasText: 'succeeded' }).waitFor();
    await shot(page, '21-source-synced');

    await page.getByRole('button', { name: 'Pause' }).click();
    await page.getByRole('button', { name: 'Resume' }).waitFor();
    await page.locator('[data-field="integrationStatus"] .badge', { hasText: 'paused' }).waitFor();
    expect((await h.as(t.key).get(`/api/v1/sources/${sourceId}`)).body.data).toMatchObject({
      state: 'inactive',
      integrationStatus: 'paused',
      nextSyncAt: null,
    });
    await expect(page.getByRole('button', { name: 'Sync now' }).isDisabled()).resolves.toBe(true);
    await shot(page, '22-source-paused');
    await page.getByRole('button', { name: 'Resume' }).click();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await h.as(t.key).get(`/api/v1/sources/${sourceId}`)).body.data).toMatchObject({
      state: 'active',
      nextSyncAt: expect.any(String),
    });

    await page.goto(`${base}/console/#/sources`);
    await page.locator(`tr[data-source-id="${sourceId}"]`).waitFor();
    await shot(page, '23-sources-list');
    await page.close();
  });

  it('creates an Amplitude integration from the Stripe app, runs it and shows the rows Amplitude received', async () => {
    const page = await signedIn(t.key, '#/integrations');
    const form = page.getByRole('form', { name: 'New integration' });
    // A source stream without a source app: the API's error appears under that task.
    await form.locator('select[name="sourceAppId"]').selectOption({ label: 'none: tracked data' });
    await form.getByRole('button', { name: 'Create integration' }).click();
    const taskError = form.locator('.task', { hasText: 'source_stream' }).locator('.field-error');
    await expect(taskError.innerText()).resolves.toBe(
      'config.tasks[0].stream: needs the integration’s sourceAppId',
    );
    await expect(form.getByRole('group', { name: 'Tasks' }).getAttribute('aria-invalid')).resolves.toBe(
      'true',
    );
    await shot(page, '24a-integration-field-error');
    await form.locator('select[name="sourceAppId"]').selectOption({ label: 'Stripe shop (stripe)' });
    await form.locator('select[name="destinationAppId"]').selectOption({ label: 'Amplitude (amplitude)' });
    await form.locator('input[name="dataType"]').fill('customers');
    await expect(form.getByRole('checkbox', { name: /^source_stream/ }).isChecked()).resolves.toBe(true);
    await form.locator('select[name="stream"]').selectOption('customers');
    await form.locator('input[name="userIdField"]').fill('email');
    await form.getByRole('button', { name: 'Add a setting' }).click();
    await form.getByLabel('Key').fill('note');
    await form.getByLabel('Value (JSON or text)').fill('from the console');
    await shot(page, '24-integration-form');
    await form.getByRole('button', { name: 'Create integration' }).click();
    await page.waitForURL(/#\/integrations\/[0-9a-f-]{36}$/);
    const integrationId = page.url().split('/').pop()!;
    const created = await h.as(t.key).get(`/api/v1/integrations/${integrationId}`);
    expect(created.body.data).toMatchObject({
      sourceAppId: stripeAppId,
      dataType: 'customers',
      config: {
        global: { note: 'from the console' },
        tasks: [{ task_type: 'source_stream', stream: 'customers', userIdField: 'email' }],
      },
      schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
      importDependencyStatus: 'ready',
    });

    const before = amplitude.accepted.length;
    await page.getByRole('button', { name: 'Run now' }).click();
    const row = newestJob(page);
    await row.locator('.badge', { hasText: 'succeeded' }).waitFor();
    const received = amplitude.accepted.length - before;
    expect(received).toBe(CUSTOMERS);
    await expect(row.locator('[data-field="rowsWritten"]').innerText()).resolves.toBe(String(received));
    await expect(page.locator('table.jobs thead').innerText()).resolves.toContain('Rows sent');
    await page.locator('[data-field="status"] .badge', { hasText: 'completed' }).waitFor();
    await shot(page, '25-integration-run');
    await page.close();
  });

  it('cancels a running sync from the page', async () => {
    // The credentials check goes through; the customers page waits at the proxy.
    proxy.holdAfter(1);
    const page = await signedIn(t.key, `#/sources/${sourceId}`);
    await page.getByRole('button', { name: 'Sync now' }).click();
    const row = newestJob(page);
    await row.locator('.badge', { hasText: 'running' }).waitFor();
    await page.locator('h2', { hasText: 'refreshing while one runs' }).waitFor();
    const jobId = await row.getAttribute('data-job-id');
    await shot(page, '26-source-sync-running');
    await row.getByRole('button', { name: 'Cancel' }).click();
    await row.locator('.badge', { hasText: 'cancelled' }).waitFor();
    await expect(row.innerText()).resolves.toContain('Cancelled by request');
    await expect(row.getByRole('button', { name: 'Cancel' }).count()).resolves.toBe(0);
    await page.locator('[data-field="integrationStatus"] .badge', { hasText: 'pending' }).waitFor();
    expect((await h.as(t.key).get(`/api/v1/jobs/${jobId}`)).body.data).toMatchObject({
      status: 'cancelled',
      error: { code: 'cancelled' },
    });
    await shot(page, '27-source-sync-cancelled');
    proxy.release();
    await page.close();
  });

  it('edits a source’s import tasks and config, a config that is not JSON shown at its field', async () => {
    const page = await signedIn(t.key, `#/sources/${sourceId}`);
    await page.getByText('Edit import tasks and config').click();
    const form = page.getByRole('form', { name: 'Edit source' });
    await form.getByRole('checkbox', { name: 'charges' }).check();
    const config = form.locator('textarea[name="config"]');
    await config.fill('{ "note": ');
    await form.getByRole('button', { name: 'Save' }).click();
    await expect(form.locator('.field-error').innerText()).resolves.toMatch(/^Config: /);
    await expect(config.getAttribute('aria-invalid')).resolves.toBe('true');
    await config.fill('{ "note": "set in the console" }');
    await form.getByRole('button', { name: 'Save' }).click();
    await form.getByText('Saved.').waitFor();
    await shot(page, '28-source-edited');
    expect((await h.as(t.key).get(`/api/v1/sources/${sourceId}`)).body.data).toMatchObject({
      importTasks: ['customers', 'charges'],
      config: { note: 'set in the console' },
    });
    await page.close();
  });
});
