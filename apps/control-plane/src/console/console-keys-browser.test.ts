import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import request from 'supertest';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { launchChromium } from '../testing/chromium';
import { lookAlikeCredentials } from '@pipeline/destinations/testing';
import { SourceEntity } from '../sources/source.entity';
import { startHarness, TEST_INTERNAL_TOKEN, type Harness, type Tenant } from '../testing/harness';
import { consoleDirectory } from './console-files';

// The console's access, write keys and warehouse pages in headless Chromium, against the real
// control plane on a real port: a read-only key sees no button the API would refuse; a write
// key created, rotated and revoked in the page, each secret checked through ingestion's own
// resolution endpoint; the warehouse page with the platform warehouse and a customer's own
// PostgreSQL (an extra cluster on loopback, reached by a name the harness resolves; loopback
// allowed as EGRESS_ALLOW_PRIVATE_RANGES allows a self-hosted network) refusing a wrong
// password at the password field. Screenshots in .reports/console/.

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');
const PASSWORD = 'Loader-Pa55-console-8d1';
const GB = 1_000_000_000;

/** Every scope that only reads. */
const READ_SCOPES = [
  'apps.read',
  'sources.read',
  'integrations.read',
  'write_keys.read',
  'usage.read',
  'tasks.read',
] as const;

/**
 * The names of actions that change something: each would answer 403 to a key with only *.read
 * scopes (a link to a form counts too: "Add Stripe", "Edit").
 */
const WRITE_ACTION =
  /\b(add|new|create|edit|rotate|revoke|replay|discard|delete|disable|enable|start|cancel|sync|pause|resume|test|save|connect|run|remove)\b/i;

const clusters = useTestClusters();

let h: Harness;
let t: Tenant;
let cluster: TestCluster;
let server: Server;
let base: string;
let browser: Browser;
let context: BrowserContext;
/** An app, a source in error with a sync job, an integration: every page has something to act on. */
let ids: { app: string; source: string; job: string; integration: string; task: string };

const resolve = (writeKey: string) =>
  request(h.app)
    .post('/internal/v1/write-keys/resolve')
    .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
    .send({ writeKey });

const openPages = new Set<Page>();

async function signedIn(key: string, hash = '#/'): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  openPages.add(page);
  page.on('close', () => openPages.delete(page));
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy|Refused/.test(m.text())) problems.push(m.text());
  });
  (page as Page & { problems?: string[] }).problems = problems;
  await page.goto(`${base}/console/${hash}`);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return page;
}

const problemsOf = (page: Page) => (page as Page & { problems?: string[] }).problems ?? [];

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Waits until the page has loaded everything it asked for (no "Loading…" left). */
async function settled(page: Page): Promise<void> {
  await page.locator('main h1').first().waitFor();
  await page.waitForFunction(() => !document.body.innerText.includes('Loading…'));
}

afterEach(async () => {
  const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').slice(-60);
  for (const page of openPages) {
    await page
      .screenshot({ path: path.join(SCREENSHOTS, `failed-keys-${name}.png`), fullPage: true })
      .catch(() => {});
    const text = await page
      .locator('body')
      .innerText({ timeout: 2_000 })
      .catch(() => '(no text)');
    const serverErrors = h.logs.filter((line) => /"level":"(error|warn)"/.test(line)).slice(-5);
    process.stderr.write(
      `${name}: ${page.url()}\n${text.slice(0, 2_000)}\nerrors: ${problemsOf(page).join(' | ')}\nserver: ${serverErrors.join('')}\n`,
    );
    await page.close();
  }
});

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  cluster = await clusters.start('console customer warehouse', { passwordLogins: true });
  await cluster.query(`CREATE ROLE loader LOGIN PASSWORD '${PASSWORD}'`);
  await cluster.createDatabase('analytics');
  await cluster.query('GRANT CONNECT, CREATE ON DATABASE analytics TO loader');
  h = await startHarness('console keys browser', {
    egress: {
      allowPrivateRanges: ['127.0.0.0/8'],
      resolve: async (name) =>
        name === 'wh.example.com' ? ['127.0.0.1'] : Promise.reject(new Error(`ENOTFOUND ${name}`)),
    },
  });
  t = await h.tenant(['automations']);
  // A write key to see (and not act on) with a read-only key, and a task with a run to not cancel.
  const existing = await h.as(t.key).post('/api/v1/write-keys').send({ name: 'website' });
  expect(existing.status).toBe(201);
  const api = h.as(t.key);
  const stripe = await api
    .post('/api/v1/apps')
    .send({ appType: 'stripe', displayName: 'Stripe shop', credentials: { secretKey: 'sk_test_keys' } });
  expect(stripe.status).toBe(201);
  const source = await api
    .post('/api/v1/sources')
    .send({ appId: stripe.body.data.id, syncType: 'stripe', importTasks: ['customers'] });
  expect(source.status).toBe(201);
  const sync = await api.post(`/api/v1/sources/${source.body.data.id}/sync`);
  expect(sync.status).toBe(202);
  await h.db.dataSource.getRepository(SourceEntity).update(
    { id: source.body.data.id },
    {
      lastError: {
        code: 'vendor_unauthorized',
        message: 'Stripe: invalid API key provided',
        at: new Date().toISOString(),
      },
    },
  );
  const braze = await api.post('/api/v1/apps').send({
    appType: 'braze',
    displayName: 'Braze',
    credentials: lookAlikeCredentials.braze,
    config: { restEndpoint: 'https://rest.iad-01.braze.com' },
  });
  expect(braze.status).toBe(201);
  const integration = await api.post('/api/v1/integrations').send({
    dataType: 'users',
    destinationAppId: braze.body.data.id,
    config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
    schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
  });
  expect(integration.status).toBe(201);
  // A task of the account, whose page offers starting a run and cancelling it to a manager.
  const task = await api.post('/api/v1/tasks').send({ template_id: 'connector_health_audit' });
  expect(task.status).toBe(201);
  ids = {
    task: task.body.data.task_id,
    app: stripe.body.data.id,
    source: source.body.data.id,
    job: sync.body.data.id,
    integration: integration.body.data.id,
  };
  // The account's storage as the usage metering last measured it: 2.5 GB today.
  await h.db.dataSource.query(
    `INSERT INTO usage_daily (account_id, day, storage_bytes, query_bytes, model_query_bytes, compute_ms,
       model_compute_ms, sync_rows, tracking_rows, storage_cost_usd, query_cost_usd, model_query_cost_usd,
       compute_cost_usd, model_compute_cost_usd, sync_rows_cost_usd)
     VALUES ($1, $2, $3, 0, 0, 0, 0, 0, 0, 0.1, 0, 0, 0, 0, 0)`,
    [t.accountId, new Date().toISOString().slice(0, 10), 2.5 * GB],
  );
  server = createServer(h.app);
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((done) => server?.close(done));
  await h?.close();
});

/** Every page, and one of each thing: what a key sees there is checked page by page. */
const everyPage = () => [
  '#/',
  '#/apps',
  `#/apps/${ids.app}`,
  '#/sources',
  `#/sources/${ids.source}`,
  '#/integrations',
  `#/integrations/${ids.integration}`,
  `#/sources/${ids.source}/jobs`,
  `#/jobs/${ids.job}`,
  '#/write-keys',
  `#/write-keys/${writeKeyId()}`,
  '#/warehouse',
  '#/usage',
  '#/tasks',
  `#/tasks/${ids.task}`,
];
let firstWriteKeyId = '';
const writeKeyId = () => firstWriteKeyId;

/** The name of every button, link and disclosure in the page's main part (not the navigation). */
async function actionsOn(page: Page): Promise<string[]> {
  return page
    .locator('main')
    .locator('button, a[href], summary, [role="button"]')
    .evaluateAll((elements) =>
      elements.map((e) => (e.getAttribute('aria-label') ?? e.textContent ?? '').replace(/\s+/g, ' ').trim()),
    );
}

/** Visits every page with `key`: the write actions each offers, by page. */
async function writeActionsByPage(key: string, screenshots: string): Promise<Record<string, string[]>> {
  firstWriteKeyId = (await h.as(t.key).get('/api/v1/write-keys')).body.data[0].id as string;
  const page = await signedIn(key);
  const offered: Record<string, string[]> = {};
  for (const hash of everyPage()) {
    await page.goto(`${base}/console/${hash}`);
    await settled(page);
    // Pages that read with this key show their data, not a refusal.
    expect({ hash, refused: await page.locator('.notice.forbidden').count() }).toEqual({ hash, refused: 0 });
    offered[hash] = (await actionsOn(page)).filter((name) => WRITE_ACTION.test(name));
    const name = hash
      .replace(/[0-9a-f]{8}-[0-9a-f-]{27}/, 'one')
      .replace(/[#/]+/g, '-')
      .replace(/-$/, '');
    await shot(page, `${screenshots}${name || '-overview'}`);
    if (hash === '#/tasks') expect(await actionsOn(page)).toContain('Check prerequisites');
  }
  expect(problemsOf(page)).toEqual([]);
  await page.close();
  return offered;
}

describe('a read-only key', () => {
  it('sees no button or link that would answer 403, on any page', async () => {
    const offered = await writeActionsByPage(await t.keyWith([...READ_SCOPES]), '20-read-only');
    expect(offered).toEqual(Object.fromEntries(everyPage().map((hash) => [hash, []])));
  });

  it('while a full key sees the actions on the same pages', async () => {
    const offered = await writeActionsByPage(t.key, '20-full-key');
    // Every page but usage and a job list (which only read) offers something to do with a full key.
    const without = Object.entries(offered)
      .filter(([, actions]) => actions.length === 0)
      .map(([hash]) => hash);
    expect(without).toEqual([`#/sources/${ids.source}/jobs`, '#/usage']);
    expect(offered['#/']).toContain('Sync Stripe shop now');
    expect(offered[`#/sources/${ids.source}`]).toEqual(expect.arrayContaining(['Sync now', 'Pause']));
    expect(offered['#/write-keys']).toContain('Create the write key');
    expect(offered['#/warehouse']).toContain('Test connection and save');
  });
});

describe('a key with some write scopes', () => {
  it('is offered the actions of its scopes only: write keys yes, the warehouse connect no', async () => {
    const key = await t.keyWith(['write_keys.read', 'write_keys.write', 'apps.read']);
    const page = await signedIn(key, '#/write-keys');
    await page.getByRole('heading', { name: 'Create a write key' }).waitFor();
    const website = page.locator('tr', { has: page.getByRole('link', { name: 'website', exact: true }) });
    expect(await website.getByRole('button').allInnerTexts()).toEqual(['Rotate', 'Revoke']);
    await page.goto(`${base}/console/#/warehouse`);
    await settled(page);
    expect(await page.getByRole('heading', { name: 'Connect your own server' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /Test connection/ }).count()).toBe(0);
    // Without usage.read the size is not asked for: the page says which scope it needs.
    expect(await page.locator('section[aria-labelledby="placed-heading"]').innerText()).toContain(
      'needs the scope usage.read',
    );
    await page.close();
  });
});

describe('write keys in the page', () => {
  it('creates a key with allowed origins, shown once, and it is the key ingestion resolves', async () => {
    const page = await signedIn(t.key, '#/write-keys');
    await page.getByRole('heading', { name: 'Create a write key' }).waitFor();
    // A malformed origin: the API's error at the field, nothing created.
    await page.getByLabel('Name').fill('Shop');
    await page.getByLabel('Allowed origins').fill('*.example.com');
    await page.getByRole('button', { name: 'Create the write key' }).click();
    const originsError = page.locator('#f-allowedOrigins-error');
    await originsError.waitFor();
    expect(await page.getByLabel('Allowed origins').getAttribute('aria-invalid')).toBe('true');
    await shot(page, '21-write-key-origin-refused');
    expect((await h.as(t.key).get('/api/v1/write-keys')).body.data).toHaveLength(1);

    await page.getByLabel('Allowed origins').fill('https://Shop.Example.com\nexample.org');
    await page.getByRole('button', { name: 'Create the write key' }).click();
    const once = page.getByRole('region', { name: 'New write key “Shop”' });
    await once.waitFor();
    const secret = await page.getByLabel('The write key').inputValue();
    expect(secret).toMatch(/^wk_[A-Za-z0-9_-]{43}$/);
    expect(await once.innerText()).toContain('it is shown only once');
    const id = await once.getAttribute('data-write-key-id');
    await page.getByRole('button', { name: 'Copy the key' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await shot(page, '22-write-key-created-once');

    const resolved = await resolve(secret);
    expect(resolved.status).toBe(200);
    expect(resolved.body.data).toMatchObject({
      writeKeyId: id,
      accountId: t.accountId,
      status: 'active',
      allowedOrigins: ['shop.example.com', 'example.org'],
    });
    // Once: dismissed, and after a reload, the page has only the masked key.
    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.reload();
    await page.getByRole('link', { name: 'Shop' }).waitFor();
    expect(await page.content()).not.toContain(secret);
    expect(await page.locator('tr', { hasText: 'Shop' }).innerText()).toContain(`${secret.slice(0, 9)}…`);
    await page.close();
  });

  it('creates a key with the keyboard alone, and lands on the key shown once', async () => {
    const page = await signedIn(t.key, '#/write-keys');
    await page.getByRole('heading', { name: 'Create a write key' }).waitFor();
    const focused = () =>
      page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent);
    // From the top of the page, Tab until the form's first field (a bound, not an expectation).
    for (let i = 0; i < 40 && (await focused()) !== 'f-name'; i += 1) await page.keyboard.press('Tab');
    expect(await focused()).toBe('f-name');
    await page.keyboard.type('Keyboard');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('f-allowedOrigins');
    await page.keyboard.type('kb.example.com');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Create the write key');
    await page.keyboard.press('Enter');
    const once = page.getByRole('region', { name: 'New write key “Keyboard”' });
    await once.waitFor();
    // Focus moved to the key: the next Tab is its field, then its copy button.
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-labelledby'))).toBe(
      'once-heading',
    );
    await page.keyboard.press('Tab');
    const secret = await page.evaluate(() => (document.activeElement as HTMLInputElement).value);
    expect((await resolve(secret)).body.data).toMatchObject({
      status: 'active',
      allowedOrigins: ['kb.example.com'],
    });
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Copy the key');
    await shot(page, '22b-write-key-created-keyboard');
    await page.close();
  });

  it('rotates after a confirmation: the new key shown once works, the old one is refused', async () => {
    const created = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'App' })).body.data as {
      id: string;
      key: string;
    };
    const page = await signedIn(t.key, '#/write-keys');
    const row = page.locator('tr', { has: page.getByRole('link', { name: 'App', exact: true }) });
    await row.getByRole('button', { name: 'Rotate' }).click();
    const confirm = row.getByRole('group', { name: 'Confirm: rotate “App”' });
    expect(await confirm.innerText()).toContain('the current key stops working at once');
    await shot(page, '23-write-key-rotate-confirm');
    // Cancel changes nothing.
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect((await resolve(created.key)).status).toBe(200);

    await row.getByRole('button', { name: 'Rotate' }).click();
    await row.getByRole('button', { name: 'Rotate now' }).click();
    await page.getByRole('region', { name: 'Rotated write key “App”' }).waitFor();
    const rotated = await page.getByLabel('The write key').inputValue();
    expect(rotated).toMatch(/^wk_/);
    expect(rotated).not.toBe(created.key);
    await shot(page, '24-write-key-rotated-once');
    expect((await resolve(created.key)).body).toMatchObject({ status: 404, code: 'write_key_not_found' });
    expect((await resolve(rotated)).body.data).toMatchObject({ writeKeyId: created.id, status: 'active' });
    await page.close();
  });

  it('revokes after a confirmation, and ingestion refuses the key', async () => {
    const created = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'Old site' })).body.data as {
      id: string;
      key: string;
    };
    const page = await signedIn(t.key, `#/write-keys/${created.id}`);
    await page.getByRole('heading', { name: 'Write key “Old site”' }).waitFor();
    await page.getByRole('button', { name: 'Revoke' }).click();
    const confirm = page.getByRole('group', { name: 'Confirm: revoke “Old site”' });
    expect(await confirm.innerText()).toContain('cannot be undone');
    await confirm.getByRole('button', { name: 'Revoke now' }).click();
    await page.locator('.badge.bad', { hasText: 'revoked' }).waitFor();
    expect(await page.getByRole('button', { name: /Rotate|Revoke/ }).count()).toBe(0);
    await shot(page, '25-write-key-revoked');
    expect((await resolve(created.key)).body.data).toMatchObject({
      writeKeyId: created.id,
      status: 'revoked',
    });
    await page.goto(`${base}/console/#/write-keys`);
    await page.getByRole('link', { name: 'Shop' }).waitFor();
    expect(await page.getByRole('link', { name: 'Old site' }).count()).toBe(0);
    await page.close();
  });
});

describe('the warehouse page', () => {
  it('shows the platform warehouse, its status and metered size', async () => {
    const page = await signedIn(t.key, '#/warehouse');
    const facts = page.locator('section[aria-labelledby="placed-heading"] dl');
    await facts.waitFor();
    await page.getByText('2.5 GB').waitFor();
    const text = await facts.innerText();
    expect(text).toContain("one of the service's servers (the platform warehouse)");
    expect(text).toContain('PostgreSQL');
    expect(text).toContain(`account_${t.accountId.replace(/-/g, '')}`);
    expect(text).toContain('active');
    expect(text).toContain('as the usage metering measured it');
    await shot(page, '26-warehouse-platform');
    await page.close();
  });

  it('connects a customer PostgreSQL: a wrong password at its field, then saved, tested, and the move named', async () => {
    const page = await signedIn(t.key, '#/warehouse');
    const form = page.getByRole('form', { name: /Connect your own PostgreSQL/ });
    await form.waitFor();
    // Fields read from the app type's schema, with their defaults.
    expect(await form.getByLabel('Port (optional)').inputValue()).toBe('5432');
    expect(await form.getByLabel('TLS mode (optional)').inputValue()).toBe('verify-full');
    // Required fields left empty: said at each, nothing sent.
    await form.getByRole('button', { name: 'Test connection and save' }).click();
    await form.locator('#f-config-host-error').waitFor();
    expect(await form.locator('[aria-invalid="true"]').count()).toBe(5);

    await form.getByLabel('Name').fill('Our warehouse');
    await form.getByLabel('Host').fill('wh.example.com');
    await form.getByLabel('Port (optional)').fill(String(cluster.port));
    await form.getByLabel('Database').fill('analytics');
    await form.getByLabel('User').fill('loader');
    await form.getByLabel('TLS mode (optional)').selectOption('disable');
    await form.getByLabel('Password').fill('Wrong-Pa55-also-secret');
    await form.getByRole('button', { name: 'Test connection and save' }).click();
    const passwordError = form.locator('#f-credentials-password-error');
    await passwordError.waitFor();
    expect(await form.getByLabel('Password').getAttribute('aria-invalid')).toBe('true');
    expect(await form.getByLabel('Host').getAttribute('aria-invalid')).toBe('false');
    expect(await passwordError.innerText()).not.toContain('Wrong-Pa55');
    await shot(page, '27-warehouse-connect-wrong-password');
    expect((await h.as(t.key).get('/api/v1/apps?role=warehouse')).body.data).toHaveLength(0);

    await form.getByLabel('Password').fill(PASSWORD);
    await form.getByRole('button', { name: 'Test connection and save' }).click();
    await form.getByRole('status').filter({ hasText: 'Connected “Our warehouse”' }).waitFor();
    const apps = (await h.as(t.key).get('/api/v1/apps?role=warehouse')).body.data as { id: string }[];
    expect(apps).toHaveLength(1);
    const move = page.getByLabel('The move to Our warehouse');
    await move.waitFor();
    expect((await move.innerText()).trim()).toBe(
      `cli warehouses move ${t.accountId} --to app-${apps[0]!.id}`,
    );
    await page.getByRole('button', { name: 'Test the connection of Our warehouse' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^The server answered: the pipeline can log in/ })
      .waitFor();
    await shot(page, '28-warehouse-connected');
    // The data has not moved: the platform warehouse still holds it.
    expect((await h.as(t.key).get('/api/v1/warehouse')).body.data.owner).toBe('platform');
    expect(h.logs.join('')).not.toContain(PASSWORD);
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });
});
