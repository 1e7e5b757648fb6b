import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { type Browser, type Page } from 'playwright-core';
import { randomUUID } from 'node:crypto';
import type { TrackingEvent } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { createRedis, ViolationLedger, type RedisClient, type ViolationKey } from '@pipeline/redis';
import type { PlanPolicy } from '@pipeline/tracking-plans';
import { launchChromium } from '../testing/chromium';
import { exampleSettings, startHarness, type Harness, type Tenant } from '../testing/harness';
import { QuarantineStack, quarantineTestLimits } from '../testing/quarantine-stack';
import { waitUntil } from '../testing/wait';
import { consoleDirectory } from './console-files';

// The Tracking plans pages as a tenant meets them, in headless Chromium against the real control
// plane: a plan created, a draft refused with its problems shown beside the editor (each with
// its JSON Pointer), fixed, published as v1, edited, published as v2; the diff between them with
// a breaking change badged; a version exported as Segment's rules; an import refused and then
// taken; a write key bound at a pinned version with a policy and overrides, read back through
// the API, refused deletion while bound, unbound, then deleted; the Violations tab over counts
// ingestion's writer put in a real Redis; the Quarantine tab over events the real warehouse
// consumer quarantined on real Kafka, one discarded and the others replayed after a version that
// accepts them. Screenshots in .reports/console/.

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');

const orderSchema = (required: string[]) => ({
  type: 'object',
  required: ['properties'],
  properties: {
    properties: {
      type: 'object',
      required,
      properties: {
        order_id: { type: 'string', pattern: '^o-[0-9]+$' },
        currency: { enum: ['USD', 'EUR'] },
      },
    },
  },
});
const v1 = { rules: [{ type: 'track', name: 'Order Completed', schema: orderSchema(['order_id']) }] };
const v2 = {
  rules: [{ type: 'track', name: 'Order Completed', schema: orderSchema(['order_id', 'currency']) }],
};
// `requird` is no JSON Schema keyword: ajv's strict mode refuses it (schema_invalid at the schema).
const misspelled = {
  rules: [
    v1.rules[0],
    { type: 'track', name: 'Cart Viewed', schema: { type: 'object', requird: ['cart_id'] } },
  ],
};

// A browser test waits on a real page and server: a bound on each wait, not a measure of speed.
jest.setTimeout(120_000);

let h: Harness;
let a: Tenant;
let server: Server;
let base: string;
let browser: Browser;
// Its replayer connects at the first replay: only the quarantine's tests need the broker.
const stack = new QuarantineStack();
let redis: RedisClient;

const openPages = new Set<Page>();

async function signedIn(key: string, hash: string, width = 1280): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 900 }, acceptDownloads: true });
  page.setDefaultTimeout(15_000);
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

/** The page is no wider than its window: nothing pushes it past a phone's screen. */
const overflow = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  redis = createRedis(
    { REDIS_URL },
    { logger: createLogger({ service: 'console-test', stream: new PassThrough() }) },
  );
  await redis.connect();
  h = await startHarness('tracking plans browser', {
    debugger: { redis, connection: { REDIS_URL } },
    deadLetterReplayer: stack.replayer,
    deadLetterOptions: { limits: quarantineTestLimits },
  });
  server = createServer(h.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  a = await h.tenant();
  browser = await launchChromium();
}, 120_000);

afterEach(async () => {
  for (const page of openPages) {
    const name = (expect.getState().currentTestName ?? 'test').replace(/[^a-z0-9]+/gi, '-').slice(-60);
    await page
      .screenshot({ path: path.join(SCREENSHOTS, `failed-${name}.png`), fullPage: true })
      .catch(() => {});
    await page.close();
  }
});

afterAll(async () => {
  await stack.stop();
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
  redis?.disconnect();
});

interface PlanView {
  id: string;
  name: string;
  latestVersion: number | null;
  draftChanged: boolean;
  draft: unknown;
}
const plansOf = async (key: string) =>
  (await h.as(key).get('/api/v1/tracking-plans?limit=100')).body.data as PlanView[];
const planOf = async (key: string, id: string) =>
  (await h.as(key).get(`/api/v1/tracking-plans/${id}`)).body.data as PlanView;

/** Puts a document in the draft editor as a paste does, in one input event. */
const typeDraft = (page: Page, value: unknown) =>
  page.getByRole('textbox', { name: 'Plan document (JSON)' }).fill(JSON.stringify(value, null, 2));

it('creates a plan, refuses a bad draft beside the editor, publishes v1 and v2, and diffs them', async () => {
  const page = await signedIn(a.key, '#/tracking-plans');
  await page.getByRole('heading', { name: 'Tracking plans', level: 1 }).waitFor();
  await page.getByText('No tracking plans yet.').waitFor();
  await shot(page, 'tracking-plans-empty');

  await page.getByRole('region', { name: 'New tracking plan' }).getByLabel('Name').fill('Checkout');
  await page.getByLabel('Description').fill('Orders from the shop');
  await page.getByRole('button', { name: 'Create the plan' }).click();
  await page.getByRole('heading', { name: 'Checkout', level: 1 }).waitFor();
  const [created] = await plansOf(a.key);
  expect(created).toMatchObject({ name: 'Checkout', latestVersion: null, draftChanged: true });
  expect(page.url()).toContain(`#/tracking-plans/${created!.id}/draft`);
  expect(await page.getByRole('link', { name: 'Draft' }).getAttribute('aria-current')).toBe('page');

  // Nothing to publish from an editor that is not JSON: said in the page, no call made.
  const editor = page.getByRole('textbox', { name: 'Plan document (JSON)' });
  await editor.fill('{ "rules": [');
  await page.getByRole('button', { name: 'Save draft' }).click();
  await page
    .locator('#plan-draft-problems')
    .getByText(/^not JSON: /)
    .waitFor();
  expect(await editor.getAttribute('aria-invalid')).toBe('true');

  // The API's 422: each problem beside the editor with its pointer and code; nothing saved.
  await typeDraft(page, misspelled);
  await page.getByRole('button', { name: 'Save draft' }).click();
  const problems = page.locator('#plan-draft-problems');
  await problems.getByText('1 problem (JSON Pointers into the plan):').waitFor();
  expect(await problems.locator('li code.pointer').allTextContents()).toEqual(['/rules/1/schema']);
  expect(await problems.locator('li .badge').allTextContents()).toEqual(['schema_invalid']);
  expect(await problems.locator('li').textContent()).toContain('requird');
  expect(await editor.getAttribute('aria-describedby')).toBe('plan-draft-problems');
  expect((await planOf(a.key, created!.id)).draft).toEqual({ rules: [] });
  await shot(page, 'tracking-plan-draft-problems');

  // Fixed, saved, published as v1; publishing the same draft again is refused plainly.
  await typeDraft(page, v1);
  await page.getByRole('button', { name: 'Save draft' }).click();
  await page.getByRole('status').getByText('Draft saved.').waitFor();
  expect(await problems.count()).toBe(0);
  expect((await planOf(a.key, created!.id)).draft).toEqual(v1);
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByRole('status').getByText('Published version 1.').waitFor();
  await page.getByText('the same as the latest version').waitFor();
  await page.getByRole('button', { name: 'Publish' }).click();
  await page
    .getByRole('alert')
    .getByText('Nothing to publish: the draft is the same as version 1 (draft_unchanged).', { exact: false })
    .waitFor();
  expect((await planOf(a.key, created!.id)).latestVersion).toBe(1);
  await shot(page, 'tracking-plan-draft-unchanged');

  // Edited (currency now required: breaking) and published as v2.
  await typeDraft(page, v2);
  expect(await page.getByRole('button', { name: 'Publish' }).isDisabled()).toBe(true);
  await page.getByRole('button', { name: 'Save draft' }).click();
  await page.getByRole('status').getByText('Draft saved.').waitFor();
  await page.getByRole('button', { name: 'Publish' }).click();
  await page.getByRole('status').getByText('Published version 2.').waitFor();
  expect(await planOf(a.key, created!.id)).toMatchObject({
    latestVersion: 2,
    draftChanged: false,
    draft: v2,
  });

  // The versions, and v1 -> v2's diff from its link: the breaking change badged.
  await page.getByRole('link', { name: 'Versions' }).click();
  await page.locator('tr[data-version="1"]').waitFor();
  expect(
    await page
      .locator('tr[data-version]')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-version'))),
  ).toEqual(['2', '1']);
  await shot(page, 'tracking-plan-versions');
  await page.getByRole('link', { name: 'Diff v1 → v2' }).click();
  const diff = page.getByRole('region', { name: 'Changes from v1 to v2' });
  await diff.waitFor();
  const api = (await h.as(a.key).get(`/api/v1/tracking-plans/${created!.id}/diff?from=1&to=2`)).body.data as {
    counts: Record<string, number>;
    changes: { kind: string; change: string; path: string }[];
  };
  expect(api.counts).toEqual({ breaking: 1, revision: 0, addition: 0 });
  expect(api.changes).toEqual([expect.objectContaining({ kind: 'breaking', change: 'required_added' })]);
  const row = diff.locator('tr[data-change-kind="breaking"]');
  expect(await row.count()).toBe(1);
  expect(await row.locator('.badge.bad').textContent()).toBe('breaking');
  expect(await row.locator('code.pointer').textContent()).toBe(api.changes[0]!.path);
  expect(await row.textContent()).toContain('required_added');
  await diff.getByText('1 breaking').waitFor();
  expect(await page.getByLabel('From', { exact: true }).inputValue()).toBe('1');
  expect(await page.getByLabel('To', { exact: true }).inputValue()).toBe('2');
  await shot(page, 'tracking-plan-diff');

  // v2 against the draft: nothing changed; the select moves the diff.
  await page.getByLabel('From', { exact: true }).selectOption('2');
  await page.getByLabel('To', { exact: true }).selectOption('draft');
  await page.getByRole('region', { name: 'Changes from v2 to the draft' }).getByText('No changes.').waitFor();

  // A phone's width: the diff's table stacks, nothing overflows.
  const phone = await signedIn(a.key, `#/tracking-plans/${created!.id}/diff/1/2`, 390);
  await phone.getByRole('region', { name: 'Changes from v1 to v2' }).waitFor();
  expect(await overflow(phone)).toBeLessThanOrEqual(0);
  await shot(phone, 'tracking-plan-diff-phone');
});

it('exports a version as Segment rules, the file the API answers', async () => {
  const plan = (await h.as(a.key).post('/api/v1/tracking-plans').send({ name: 'Exported plan', plan: v1 }))
    .body.data as PlanView;
  await h.as(a.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
  const page = await signedIn(a.key, `#/tracking-plans/${plan.id}/versions`);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Export v1 (Segment)' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe('Exported-plan-v1.segment.json');
  const file = await download.path();
  const exported = (
    await h.as(a.key).get(`/api/v1/tracking-plans/${plan.id}/versions/1/export?format=segment`)
  ).body.data as unknown;
  expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(exported);
  expect(exported).toEqual({
    rules: [{ type: 'TRACK', key: 'Order Completed', version: 1, jsonSchema: orderSchema(['order_id']) }],
  });
});

it('imports Segment rules: refused with pointers into the content, then taken as a draft', async () => {
  const page = await signedIn(a.key, '#/tracking-plans');
  const form = page.getByRole('region', { name: 'Import a tracking plan' });
  await form.waitFor();
  await form.getByLabel('Name').fill('From Segment');
  const content = form.getByRole('textbox', { name: 'Segment rules (JSON)' });
  const before = (await plansOf(a.key)).length;

  await content.fill(
    JSON.stringify({
      rules: [{ type: 'TRACK', key: 'Old', version: 1, jsonSchema: {}, deprecatedAt: '2024-01-01' }],
    }),
  );
  await form.getByRole('button', { name: 'Import' }).click();
  const problems = page.locator('#import-content-problems');
  await problems.getByText('(JSON Pointers into the content)', { exact: false }).waitFor();
  expect(await problems.locator('li .badge').allTextContents()).toEqual(['not_mappable']);
  expect(await problems.locator('li code.pointer').allTextContents()).toEqual(['/rules/0/deprecatedAt']);
  expect(await content.getAttribute('aria-invalid')).toBe('true');
  expect((await plansOf(a.key)).length).toBe(before);
  await shot(page, 'tracking-plan-import-problems');

  await content.fill(
    JSON.stringify({
      rules: [{ type: 'TRACK', key: 'Signed Up', version: 1, jsonSchema: { type: 'object' } }],
    }),
  );
  await form.getByRole('button', { name: 'Import' }).click();
  await page.getByRole('heading', { name: 'From Segment', level: 1 }).waitFor();
  const imported = (await plansOf(a.key)).find((p) => p.name === 'From Segment');
  expect(imported).toBeDefined();
  expect((await planOf(a.key, imported!.id)).draft).toEqual({
    rules: [{ type: 'track', name: 'Signed Up', version: 1, schema: { type: 'object' } }],
  });
});

it('shows a key without tracking_plans.write no action, and one without read the missing scope', async () => {
  const [plan] = await plansOf(a.key);
  const reader = await a.keyWith(['tracking_plans.read']);
  const page = await signedIn(reader, `#/tracking-plans/${plan!.id}/draft`);
  await page.getByRole('heading', { name: 'Draft', level: 2 }).waitFor();
  expect(
    await page.getByRole('textbox', { name: 'Plan document (JSON)' }).getAttribute('readonly'),
  ).not.toBeNull();
  expect(await page.getByRole('button', { name: /Save|Publish/ }).count()).toBe(0);
  await page.goto(`${base}/console/#/tracking-plans`);
  await page.getByRole('link', { name: plan!.name }).waitFor();
  expect(await page.getByRole('region', { name: /New tracking plan|Import a tracking plan/ }).count()).toBe(
    0,
  );

  const stranger = await a.keyWith(['write_keys.read']);
  const denied = await signedIn(stranger, '#/tracking-plans');
  await denied
    .getByRole('alert')
    .getByText('This API key is not allowed to read tracking plans', { exact: false })
    .waitFor();
  expect(await denied.getByRole('alert').locator('code').textContent()).toBe('tracking_plans.read');
});

it('binds a write key at v1 with a policy and per-destination overrides, and unbinds it', async () => {
  const api = h.as(a.key);
  const plan = (await api.post('/api/v1/tracking-plans').send({ name: 'Bound plan', plan: v1 })).body
    .data as PlanView;
  await api.post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
  await api.put(`/api/v1/tracking-plans/${plan.id}/draft`).send(v2).expect(200);
  await api.post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
  // A destination to override: an integration from the website to Braze.
  const web = await api.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Website' });
  const braze = await api
    .post('/api/v1/apps')
    .send({ appType: 'braze', displayName: 'Braze EU', ...exampleSettings('braze') });
  const integration = await api.post('/api/v1/integrations').send({
    sourceAppId: web.body.data.id,
    destinationAppId: braze.body.data.id,
    dataType: 'events',
    config: { global: {}, tasks: [{ task_type: 'events' }] },
    schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
  });
  expect(integration.status).toBe(201);
  const integrationId = integration.body.data.id as string;
  // A second one, deleted while the form is open: the API refuses an override naming it.
  const meta = await api
    .post('/api/v1/apps')
    .send({ appType: 'meta_conversions', displayName: 'Meta Pixel', ...exampleSettings('meta_conversions') });
  const gone = await api.post('/api/v1/integrations').send({
    sourceAppId: web.body.data.id,
    destinationAppId: meta.body.data.id,
    dataType: 'events',
    config: { global: {}, tasks: [{ task_type: 'events' }] },
    schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
  });
  expect(gone.status).toBe(201);
  const goneId = gone.body.data.id as string;
  const key = (await api.post('/api/v1/write-keys').send({ name: 'Shop' })).body.data as { id: string };

  const page = await signedIn(a.key, `#/write-keys/${key.id}`);
  const section = page.getByRole('region', { name: 'Tracking plan' });
  await section.getByText("This key's events are held to no tracking plan.").waitFor();
  await section.getByLabel('Plan', { exact: true }).selectOption({ label: 'Bound plan (v2)' });
  await section.getByLabel('Version', { exact: true }).selectOption({ label: 'v1 (pinned)' });
  // omit is not offered where a violation names nothing to strip.
  const unplanned = section.getByRole('combobox', { name: 'Unplanned event: all destinations' });
  expect(await unplanned.locator('option').allTextContents()).toEqual(['allow', 'quarantine']);
  expect(
    await section
      .getByRole('combobox', { name: 'Unplanned property: all destinations' })
      .locator('option')
      .allTextContents(),
  ).toEqual(['allow', 'omit', 'quarantine']);
  await unplanned.selectOption('quarantine');
  await section.getByRole('combobox', { name: 'Unplanned property: all destinations' }).selectOption('omit');

  // Overrides: the warehouse takes unplanned events; Braze quarantines wrong values.
  const destinations = section.getByLabel('Override for', { exact: true });
  expect((await destinations.locator('option').allTextContents()).sort()).toEqual([
    'Braze EU (braze)',
    'Meta Pixel (meta_conversions)',
    'Warehouse',
  ]);
  await destinations.selectOption({ label: 'Warehouse' });
  await section.getByRole('button', { name: 'Add override' }).click();
  await section.getByRole('combobox', { name: 'Unplanned event: Warehouse' }).selectOption('allow');
  await destinations.selectOption({ label: 'Braze EU (braze)' });
  await section.getByRole('button', { name: 'Add override' }).click();
  await section
    .getByRole('combobox', { name: 'Wrong type or value: Braze EU (braze)' })
    .selectOption('quarantine');
  await destinations.selectOption({ label: 'Meta Pixel (meta_conversions)' });
  await section.getByRole('button', { name: 'Add override' }).click();
  await section
    .getByRole('combobox', { name: 'Unplanned property: Meta Pixel (meta_conversions)' })
    .selectOption('quarantine');
  await shot(page, 'tracking-plan-binding-form');

  // Meta's integration is deleted meanwhile: the API's 422 with its pointer, nothing bound.
  await api.delete(`/api/v1/integrations/${goneId}`).expect(200);
  await section.getByRole('button', { name: 'Bind', exact: true }).click();
  const refused = section.locator('#bind-problems');
  await refused.getByText('1 problem (JSON Pointers into the policy):').waitFor();
  expect(await refused.locator('li code.pointer').allTextContents()).toEqual([`/destinations/${goneId}`]);
  expect(await refused.locator('li').textContent()).toContain(
    'is neither warehouse nor an integration of this account',
  );
  expect((await api.get(`/api/v1/write-keys/${key.id}/tracking-plan`)).status).toBe(404);
  await shot(page, 'tracking-plan-binding-problems');
  await section
    .getByRole('button', { name: 'Remove the override for Meta Pixel (meta_conversions)' })
    .click();
  await section.getByRole('button', { name: 'Bind', exact: true }).click();
  await section.getByRole('status').getByText('Bound to “Bound plan”, pinned to v1.').waitFor();

  const bound = await api.get(`/api/v1/write-keys/${key.id}/tracking-plan`);
  expect(bound.status).toBe(200);
  expect(bound.body.data).toEqual({
    writeKeyId: key.id,
    planId: plan.id,
    binding: 'pinned',
    version: 1,
    policy: {
      actions: {
        unplanned_event: 'quarantine',
        unplanned_property: 'omit',
        missing_required: 'allow',
        wrong_value: 'allow',
        common_schema: 'allow',
      },
      destinations: {
        warehouse: { unplanned_event: 'allow' },
        [integrationId]: { wrong_value: 'quarantine' },
      },
    },
    updatedAt: expect.any(String),
  });
  // The page shows the binding as stored, and the form starts from it.
  await section.getByText('pinned to v1', { exact: true }).waitFor();
  const current = section.getByRole('table', { name: 'Current policy' });
  expect(
    await current
      .getByRole('row', { name: /^Unplanned event/ })
      .locator('td')
      .allTextContents(),
  ).toEqual(['quarantine', 'allow', 'as all']);
  expect(await section.getByLabel('Version', { exact: true }).inputValue()).toBe('1');
  await shot(page, 'tracking-plan-binding');

  // A key that may read plans but not change them sees the binding and no form.
  const reader = await a.keyWith(['write_keys.read', 'tracking_plans.read']);
  const readOnly = await signedIn(reader, `#/write-keys/${key.id}`);
  const readSection = readOnly.getByRole('region', { name: 'Tracking plan' });
  await readSection.getByText('pinned to v1', { exact: true }).waitFor();
  expect(await readSection.getByRole('button').count()).toBe(0);
  expect(await readSection.getByRole('combobox').count()).toBe(0);
  const keysOnly = await signedIn(await a.keyWith(['write_keys.read']), `#/write-keys/${key.id}`);
  await keysOnly.getByRole('region', { name: 'Tracking plan' }).getByText('Needs the scope').waitFor();

  // The plan cannot be deleted while the key binds it: the page says why; renaming is fine.
  const planPage = await signedIn(a.key, `#/tracking-plans/${plan.id}`);
  await planPage.getByText('Edit name and description').click();
  await planPage.getByLabel('Name', { exact: true }).fill('Bound plan (checkout)');
  await planPage.getByRole('button', { name: 'Save name and description' }).click();
  await planPage.getByRole('heading', { name: 'Bound plan (checkout)', level: 1 }).waitFor();
  expect((await planOf(a.key, plan.id)).name).toBe('Bound plan (checkout)');
  await planPage.getByRole('button', { name: 'Delete the plan' }).click();
  await planPage.getByRole('button', { name: 'Delete now' }).click();
  await planPage
    .getByRole('alert')
    .getByText('A write key binds this plan (1 in all): unbind it on the key', { exact: false })
    .waitFor();
  expect((await api.get(`/api/v1/tracking-plans/${plan.id}`)).status).toBe(200);
  await shot(planPage, 'tracking-plan-in-use');

  // Unbind, confirmed first; then the plan can go.
  await section.getByRole('button', { name: 'Unbind' }).click();
  await section.getByRole('button', { name: 'Unbind now' }).click();
  await section.getByRole('status').getByText('Unbound', { exact: false }).waitFor();
  const unbound = await api.get(`/api/v1/write-keys/${key.id}/tracking-plan`);
  expect([unbound.status, unbound.body.code]).toEqual([404, 'tracking_plan_binding_not_found']);
  await planPage.getByRole('button', { name: 'Delete now' }).click();
  await planPage.getByRole('heading', { name: 'Tracking plans', level: 1 }).waitFor();
  expect((await api.get(`/api/v1/tracking-plans/${plan.id}`)).status).toBe(404);
});

describe('the Quarantine tab (real Kafka, warehouse consumer and dead-letter index)', () => {
  const policy: PlanPolicy = { actions: { missing_required: 'quarantine', unplanned_event: 'quarantine' } };
  const v2Relaxed = { rules: [{ type: 'track', name: 'Order Completed', schema: orderSchema([]) }] };
  const track = (event: string, properties: Record<string, unknown>): TrackingEvent =>
    ({
      type: 'track',
      event,
      messageId: `q-${randomUUID()}`,
      anonymousId: 'anon-q',
      timestamp: '2026-11-29T10:00:00.000Z',
      properties,
    }) as TrackingEvent;
  interface Held {
    id: string;
    messageId: string;
    name: string | null;
    codes: string[];
    status: string;
    replayedVersion: number | null;
    violations: { code: string; path: string }[];
  }
  const held = async (planId: string, query = '') =>
    (await h.as(a.key).get(`/api/v1/quarantine?planId=${planId}&limit=100${query}`)).body as {
      data: Held[];
      pagination: { total: number };
    };

  beforeAll(async () => {
    await stack.start(h);
  }, 60_000);

  it('lists the plan’s quarantined events, shows one, discards one and replays the rest under v2', async () => {
    const api = h.as(a.key);
    const plan = (await api.post('/api/v1/tracking-plans').send({ name: 'Held orders', plan: v1 })).body
      .data as PlanView;
    await api.post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
    // Three orders without order_id (missing_required), one unplanned event, one that passes.
    const missing = [
      track('Order Completed', {}),
      track('Order Completed', {}),
      track('Order Completed', {}),
    ];
    const unplanned = track('Cart Viewed', { cart_id: 'c-1' });
    const passing = track('Order Completed', { order_id: 'o-1' });
    await stack.send(a, [...missing, unplanned, passing], { planId: plan.id, version: 1, plan: v1, policy });
    await waitUntil('4 events quarantined', async () => (await held(plan.id)).pagination.total === 4);

    const page = await signedIn(a.key, `#/tracking-plans/${plan.id}/quarantine`);
    const rows = page.getByRole('table', { name: 'Quarantined events' }).locator('tbody tr');
    await page.locator(`tr[data-message-id="${unplanned.messageId}"]`).waitFor();
    expect(await page.getByRole('link', { name: 'Quarantine' }).getAttribute('aria-current')).toBe('page');
    expect(
      (await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-message-id')))).sort(),
    ).toEqual([...missing, unplanned].map((e) => e.messageId).sort());
    const unplannedRow = page.locator(`tr[data-message-id="${unplanned.messageId}"]`);
    expect(await unplannedRow.locator('td[data-label="Event"]').textContent()).toBe('track “Cart Viewed”');
    expect(await unplannedRow.locator('td[data-label="Codes"] .badge').allTextContents()).toEqual([
      'unplanned_event',
    ]);
    expect(await unplannedRow.locator('td[data-label="Destination"]').textContent()).toBe('warehouse');
    expect(await unplannedRow.locator('td[data-label="Status"]').textContent()).toBe('quarantined');
    expect(await unplannedRow.locator('td[data-label="Received"] time').count()).toBe(1);
    expect(await unplannedRow.locator('td[data-label="Quarantined"] time').count()).toBe(1);
    await shot(page, 'tracking-plan-quarantine');

    // One event in detail: its violations with their pointers, and the event as received.
    const missingRow = page.locator(`tr[data-message-id="${missing[0]!.messageId}"]`);
    await missingRow.getByRole('link').click();
    const detail = page.getByRole('region', { name: `Quarantined event ${missing[0]!.messageId}` });
    await detail.waitFor();
    const apiViolations = (await held(plan.id)).data.find(
      (q) => q.messageId === missing[0]!.messageId,
    )!.violations;
    expect(apiViolations.map((v) => [v.code, v.path])).toEqual([
      ['missing_required', '/properties/order_id'],
    ]);
    const violations = detail.getByRole('list', { name: 'Violations' });
    expect(await violations.locator('code.pointer').allTextContents()).toEqual(['/properties/order_id']);
    expect(await violations.locator('.badge').allTextContents()).toEqual(['missing_required']);
    expect(JSON.parse((await detail.locator('pre').textContent()) ?? '')).toEqual(missing[0]);
    await shot(page, 'tracking-plan-quarantined-event');
    await page.getByRole('link', { name: '← All quarantined events' }).click();

    // The unplanned event filtered by its code, then discarded after a confirmation.
    await page.getByLabel('Code', { exact: true }).selectOption('unplanned_event');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitUntil('one row left', async () => (await rows.count()) === 1);
    await page.getByRole('button', { name: 'Discard all 1 filtered' }).click();
    await page.getByRole('button', { name: 'Discard now' }).click();
    await page.getByRole('status').getByText('Discarded 1, skipped 0.').waitFor();
    expect((await held(plan.id, '&status=discarded')).data.map((q) => q.messageId)).toEqual([
      unplanned.messageId,
    ]);

    // One order, selected, checked again under v1: still held.
    await page.getByLabel('Code', { exact: true }).selectOption('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitUntil('three rows', async () => (await rows.count()) === 3);
    await page.getByRole('checkbox', { name: `Select ${missing[1]!.messageId}` }).check();
    await page.getByLabel('Version', { exact: true }).fill('1');
    await page.getByRole('button', { name: 'Replay the 1 selected' }).click();
    await page.getByRole('status').getByText('Replayed 0, still quarantined 1, skipped 0.').waitFor();

    // v2 no longer requires order_id: the filtered set replayed under the latest version.
    await api.put(`/api/v1/tracking-plans/${plan.id}/draft`).send(v2Relaxed).expect(200);
    await api.post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201);
    await page.getByLabel('Version', { exact: true }).fill('');
    await page.getByRole('button', { name: 'Replay all 3 filtered' }).click();
    await page.getByRole('status').getByText('Replayed 3, still quarantined 0, skipped 0.').waitFor();
    await page.getByText('No quarantined events for these filters.').waitFor();
    const replayed = await held(plan.id, '&status=replayed');
    expect(replayed.data.map((q) => [q.messageId, q.replayedVersion]).sort()).toEqual(
      missing.map((e) => [e.messageId, 2]).sort(),
    );
    await page.getByLabel('Status', { exact: true }).selectOption('replayed');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitUntil('three replayed rows', async () => (await rows.count()) === 3);
    expect(await rows.locator('td[data-label="Status"]').allTextContents()).toEqual([
      'replayed at v2',
      'replayed at v2',
      'replayed at v2',
    ]);
    await shot(page, 'tracking-plan-quarantine-replayed');

    // A key that reads plans sees the held events and no action.
    await stack.send(a, [track('Order Completed', { order_id: 7 })], {
      planId: plan.id,
      version: 1,
      plan: v1,
      policy: { actions: { wrong_value: 'quarantine' } },
    });
    await waitUntil('1 more event quarantined', async () => (await held(plan.id)).pagination.total === 1);
    const reader = await signedIn(
      await a.keyWith(['tracking_plans.read']),
      `#/tracking-plans/${plan.id}/quarantine`,
    );
    await reader.getByRole('table', { name: 'Quarantined events' }).locator('tbody tr').waitFor();
    expect(await reader.getByRole('button', { name: /Replay|Discard/ }).count()).toBe(0);
    expect(await reader.getByRole('checkbox').count()).toBe(0);
  });
});

it('shows a plan’s violations per event, code and path, with their samples', async () => {
  const api = h.as(a.key);
  const created = await api.post('/api/v1/tracking-plans').send({ name: 'Checkout (violations)', plan: v1 });
  const planId = created.body.data.id as string;
  const key = (code: string, path: string): ViolationKey => ({
    planId,
    version: 1,
    writeKeyId: 'wk-console',
    eventType: 'track',
    eventName: 'Order Completed',
    code,
    path,
  });
  // Written by ingestion's own writer, as if half an hour ago: in the 1 h, 24 h, 7 d and 30 d ranges.
  const at = Date.now() - 30 * 60_000;
  const ledger = new ViolationLedger(
    redis,
    createLogger({ service: 'console-test', stream: new PassThrough() }),
    {},
    () => at,
  );
  const entry = (code: string, path: string, count: number, message: string, properties: object) => ({
    key: key(code, path),
    count,
    sample: () => ({
      messageId: `m-${code}`,
      receivedAt: new Date(at).toISOString(),
      message,
      payload: { type: 'track', event: 'Order Completed', properties },
    }),
  });
  ledger.record(a.accountId, [
    entry('missing_required', '/properties/order_id', 70, '/properties/order_id is required', {
      currency: 'USD',
    }),
    entry('enum_mismatch', '/properties/currency', 30, '/properties/currency must be one of USD, EUR', {
      order_id: 'o-1',
      currency: 'GBP',
    }),
  ]);
  await waitUntil('counts written', async () => ledger.stats.recorded === 100);

  const page = await signedIn(a.key, `#/tracking-plans/${planId}/violations`);
  const section = page.getByRole('region', { name: 'Violations' });
  const rows = section.locator('table.violations tbody tr:not(.samples)');
  await rows.first().waitFor();
  const cells = await Promise.all(
    (await rows.all()).map(async (row) => (await row.locator('td').allTextContents()).slice(0, 4)),
  );
  expect(cells).toEqual([
    ['Order Completed', 'missing_required', '/properties/order_id', '70'],
    ['Order Completed', 'enum_mismatch', '/properties/currency', '30'],
  ]);
  await section.getByText('100 violations in the last 24 hours', { exact: false }).waitFor();
  await section.getByRole('button', { name: 'Show samples (1)' }).first().click();
  const sample = section.getByLabel('Sample 1 of missing_required at /properties/order_id');
  expect(JSON.parse((await sample.textContent()) ?? '')).toEqual({
    type: 'track',
    event: 'Order Completed',
    properties: { currency: 'USD' },
  });
  await shot(page, 'tracking-plan-violations');

  // One hour by the minute: the same counts; then 30 days by the hour.
  await section.getByRole('button', { name: '1 hour' }).click();
  await section.getByText('100 violations in the last 1 hour, by minute', { exact: false }).waitFor();
  await section.getByRole('button', { name: '30 days' }).click();
  await section.getByText('100 violations in the last 30 days, by hour', { exact: false }).waitFor();
  expect((await rows.first().locator('td').allTextContents())[3]).toBe('70');
  expect(await overflow(page)).toBe(0);

  // On a phone each group is a block of labelled cells, the tab no wider than the screen (the
  // plan's header above it is the page's, not the tab's).
  const phone = await signedIn(a.key, `#/tracking-plans/${planId}/violations`, 390);
  const phoneSection = phone.getByRole('region', { name: 'Violations' });
  await phoneSection.getByText('100 violations in the last 24 hours', { exact: false }).waitFor();
  await phoneSection.getByRole('button', { name: 'Show samples (1)' }).first().click();
  await phoneSection.getByLabel('Sample 1 of missing_required at /properties/order_id').waitFor();
  const box = await phoneSection.boundingBox();
  expect(box!.x + box!.width).toBeLessThanOrEqual(390);
  expect(await phoneSection.evaluate((el) => el.scrollWidth - el.clientWidth)).toBe(0);
  await shot(phone, 'tracking-plan-violations-phone');
});
