import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import type { SubjectRowCounter } from '../regulations/regulations';
import { launchChromium } from '../testing/chromium';
import { exampleSettings, startHarness, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import { startScratchWarehouse, trackRow, userRow, type ScratchWarehouse } from '../testing/warehouse';
import { consoleDirectory } from './console-files';

// The Privacy page as a tenant meets it, in headless Chromium against the real control plane:
// a regulation is previewed (the dry run's rows per table in the account's warehouse, each
// destination with its deletion support), created only for the input previewed, listed with a
// status per target; its subjects are listed as suppressed and lifted. A read-only key sees the
// lists without Preview, Create or Lift; another account sees none of it. Screenshots in
// .reports/console/ at a desktop's and a phone's width.

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');
// Ids as people carry them: Unicode, spaces inside, and one the form must not trim away inside.
const ALICE = 'usér 1 😀';
const BOB = 'user-2-ß';
const CAROL = 'user-3-مرحبا';

let wh: ScratchWarehouse;
let h: Harness;
let a: Tenant;
let b: Tenant;
let server: Server;
let base: string;
let browser: Browser;

const openPages = new Set<Page>();

/**
 * A dry run's rows, counted in the scratch warehouse with SQL of the test's own: every row of a
 * table holding one of the ids in any identifier column it has.
 */
const countRows: SubjectRowCounter = async (accountId, { userIds, anonymousIds }) => {
  const schema = warehouseSchemaFor(accountId);
  const ids = [...userIds, ...anonymousIds];
  const counts = { events: 0, users: 0, groups: 0, aliases: 0 };
  for (const table of Object.keys(counts) as (keyof typeof counts)[]) {
    const { rows: columns } = await wh.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns
        WHERE table_schema = $1 AND table_name = $2 AND column_name IN ('user_id', 'anonymous_id', 'previous_id')`,
      [schema, table],
    );
    if (columns.length === 0) continue;
    const where = columns.map((c) => `"${c.column_name}" = ANY($1)`).join(' OR ');
    const { rows } = await wh.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM "${schema}"."${table}" WHERE ${where}`,
      [ids],
    );
    counts[table] = rows[0]?.n ?? 0;
  }
  return counts;
};

async function signedIn(key: string, hash: string, width = 1280): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height: 900 } });
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

/**
 * Puts a long list in the Ids box at once, as a paste does: Playwright's fill() edits a textarea
 * line by line (7 s for 1,000 lines on this machine, in a blank page too).
 */
const pasteIds = (page: Page, text: string) =>
  page.getByRole('textbox', { name: 'Ids' }).evaluate((box, value) => {
    (box as { value: string }).value = value;
    box.dispatchEvent(new Event('input', { bubbles: true }));
  }, text);

/** The page is no wider than its window: nothing pushes it past a phone's screen. */
const overflow = (page: Page) =>
  page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  wh = await startScratchWarehouse('privacy browser warehouse');
  h = await startHarness('privacy browser', {
    warehouse: wh.warehouses,
    warehouseUrl: wh.url,
    subjectRowCounter: countRows,
  });
  server = createServer(h.app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  a = await h.tenant();
  b = await h.tenant();

  // A source and two destinations: Braze deletes users, Meta Conversions cannot.
  const api = h.as(a.key);
  const web = await api.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Website' });
  expect(web.status).toBe(201);
  for (const [appType, displayName] of [
    ['braze', 'Braze EU'],
    ['meta_conversions', 'Meta Pixel'],
  ] as const) {
    const app = await api.post('/api/v1/apps').send({ appType, displayName, ...exampleSettings(appType) });
    expect(app.status).toBe(201);
    const integration = await api.post('/api/v1/integrations').send({
      sourceAppId: web.body.data.id,
      destinationAppId: app.body.data.id,
      dataType: 'events',
      config: { global: {}, tasks: [{ task_type: 'events' }] },
      schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
    });
    expect(integration.status).toBe(201);
  }

  // Alice: 3 events and an identify; Bob: 1 event; an unregulated user: 2 events. Account B holds
  // Alice's id too, and keeps her.
  const at = new Date(Date.now() - 60_000);
  const event = (userId: string) => {
    const row = trackRow({ name: 'Order Completed', at });
    Object.assign(row.row, { user_id: userId });
    return row;
  };
  await wh.seed(a.accountId, [
    event(ALICE),
    event(ALICE),
    event(ALICE),
    userRow(ALICE, at),
    event(BOB),
    event('someone-else'),
    event('someone-else'),
  ]);
  await wh.seed(b.accountId, [event(ALICE), userRow(ALICE, at)]);
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
  await browser?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await h?.close();
  await wh?.drop();
});

interface Listed {
  id: string;
  regulationType: string;
  subjectCount: number;
  targets: { target: string; name: string; status: string }[];
}
const regulationsOf = async (key: string) =>
  (await h.as(key).get('/api/v1/regulations')).body.data as Listed[];
const suppressedOf = async (key: string) =>
  (await h.as(key).get('/api/v1/suppressions')).body.pagination.total as number;

it('previews, creates only what was previewed, lists each target, and lifts the suppression', async () => {
  const page = await signedIn(a.key, '#/privacy');
  await page.getByRole('heading', { name: 'New regulation' }).waitFor();
  const create = page.getByRole('button', { name: 'Create', exact: true });
  expect(await create.isDisabled()).toBe(true);

  // Too many ids: refused in the page, no call made.
  const ids = page.getByRole('textbox', { name: 'Ids' });
  await pasteIds(page, Array.from({ length: 5001 }, (_, i) => `u${i}`).join('\n'));
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByText('At most 5,000 ids a regulation: 5,001 given.').waitFor();
  expect(await ids.getAttribute('aria-invalid')).toBe('true');

  // An id over the API's 1,024 characters: the API's 400, shown at the field.
  await ids.fill(`${ALICE}\n${'x'.repeat(1025)}`);
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByRole('alert').getByText('validation_failed').waitFor();
  expect(await regulationsOf(a.key)).toEqual([]);

  // Spaces around an id go, a repeated id counts once, spaces inside stay.
  await ids.fill(`  ${ALICE}  \n${BOB}\n${ALICE}\n`);
  await page.getByRole('button', { name: 'Preview' }).click();
  const preview = page.getByRole('region', { name: /^Preview: SUPPRESS_WITH_DELETE of 2 USER_ID subjects$/ });
  await preview.waitFor();
  const dryRun = (
    await h
      .as(a.key)
      .post('/api/v1/regulations')
      .send({
        regulationType: 'SUPPRESS_WITH_DELETE',
        subjectType: 'USER_ID',
        subjectIds: [ALICE, BOB],
        dryRun: true,
      })
  ).body.data as {
    warehouses: { name: string; rows: Record<string, number> }[];
    destinations: { name: string; deletion: string }[];
  };
  // The page shows the dry run's own numbers: Alice's 3 events and 1 user row, Bob's 1 event.
  expect(dryRun.warehouses).toEqual([
    expect.objectContaining({ rows: { events: 4, users: 1, groups: 0, aliases: 0 } }),
  ]);
  const rows = preview.getByRole('table', { name: 'Rows to delete per warehouse' }).getByRole('row');
  expect(await rows.nth(1).innerText()).toMatch(
    new RegExp(`^${dryRun.warehouses[0]!.name}\\s+4\\s+1\\s+0\\s+0$`),
  );
  // Each destination with the dry run's answer; Meta Conversions has no user deletion.
  const destinations = preview.getByRole('table', { name: 'Destinations and their deletion support' });
  expect(dryRun.destinations.map((d) => d.name).sort()).toEqual(['Braze EU', 'Meta Pixel']);
  expect(dryRun.destinations.find((d) => d.name === 'Meta Pixel')?.deletion).toBe('not_supported');
  for (const destination of dryRun.destinations)
    expect(
      await destinations.getByRole('row', { name: destination.name }).locator('.badge').innerText(),
    ).toBe(destination.deletion.replace('_', ' '));
  expect(await create.isDisabled()).toBe(false);
  await shot(page, 'privacy-preview');

  // The input changes: Create waits for a new preview.
  await ids.fill(`${ALICE}\n${BOB}\n${CAROL}`);
  await page.getByText('The form changed since the preview').waitFor();
  expect(await create.isDisabled()).toBe(true);
  expect(await regulationsOf(a.key)).toEqual([]);
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByRole('region', { name: /^Preview: SUPPRESS_WITH_DELETE of 3 USER_ID subjects$/ }).waitFor();
  await create.click();
  const created = page.getByRole('status').filter({ hasText: /^Regulation .* created for 3 subjects/ });
  await created.waitFor();

  const [regulation] = await regulationsOf(a.key);
  expect(regulation).toMatchObject({ regulationType: 'SUPPRESS_WITH_DELETE', subjectCount: 3 });
  expect(await created.innerText()).toContain(regulation!.id);
  const card = page.getByRole('region', { name: /^SUPPRESS_WITH_DELETE · 3 USER_ID subjects/ });
  await card.waitFor();
  // One row per target the API lists, each with its name.
  const targets = card.getByRole('table', { name: `Targets of ${regulation!.id}` });
  for (const target of regulation!.targets)
    await targets.locator(`tr[data-target="${target.target}"]`).getByText(target.name).first().waitFor();
  expect(await targets.locator('tbody tr').count()).toBe(regulation!.targets.length);
  // Each target's status as the API reports it, in its tone: not_supported neutral, failed an
  // error, the others in progress until done.
  const tones: Record<string, string> = { not_supported: 'neutral', failed: 'bad', done: 'good' };
  for (const target of regulation!.targets) {
    const badge = targets.locator(`tr[data-target="${target.target}"] .badge`);
    expect(await badge.getAttribute('class')).toBe(`badge ${tones[target.status] ?? 'progress'}`);
  }
  await shot(page, 'privacy-created');

  // The three subjects are suppressed; one is found by its id (the API hashes it).
  const suppressed = page.getByRole('table', { name: 'Suppressed subjects' });
  await suppressed.locator('tbody tr').nth(2).waitFor();
  expect(await suppressed.locator('tbody tr').count()).toBe(3);
  await page.getByRole('textbox', { name: 'Id', exact: true }).fill(CAROL);
  await page.getByRole('button', { name: 'Find' }).click();
  await page.getByRole('button', { name: 'Show all' }).waitFor();
  await waitForRows(suppressed, 1);

  // Lift, confirmed first: an UNSUPPRESS regulation, and nothing is suppressed any more.
  await suppressed.getByRole('button', { name: /^Lift the suppression of / }).click();
  await page.getByRole('group', { name: 'Confirm lifting' }).getByRole('button', { name: 'Lift' }).click();
  await page
    .getByRole('status')
    .filter({ hasText: /^Lifted: regulation .* \(UNSUPPRESS\)/ })
    .waitFor();
  await page.getByText('This subject is not suppressed.').waitFor();
  expect(await suppressedOf(a.key)).toBe(0);
  expect((await regulationsOf(a.key)).map((r) => r.regulationType)).toEqual([
    'UNSUPPRESS',
    'SUPPRESS_WITH_DELETE',
  ]);
  await page.getByRole('button', { name: 'Show all' }).click();
  await page.getByText('No subject is suppressed.').waitFor();
  await shot(page, 'privacy-lifted');
  expect(await overflow(page)).toBe(0);
  await page.close();
}, 120_000);

/** Waits until `table` lists `count` rows: a filtered list replaces the previous one when it answers. */
async function waitForRows(table: ReturnType<Page['getByRole']>, count: number): Promise<void> {
  await waitUntil(`${count} rows listed`, async () => (await table.locator('tbody tr').count()) === count);
}

it("fits a phone's width: the targets stacked, nothing wider than the screen", async () => {
  const page = await signedIn(a.key, '#/privacy', 390);
  await page.getByRole('region', { name: /^SUPPRESS_WITH_DELETE · 3 USER_ID subjects/ }).waitFor();
  await page.getByRole('textbox', { name: 'Ids' }).fill(`${ALICE}\n${BOB}`);
  await page.getByRole('button', { name: 'Preview' }).click();
  await page.getByRole('region', { name: /^Preview: / }).waitFor();
  expect(await overflow(page)).toBe(0);
  await shot(page, 'privacy-narrow');
  await page.close();
}, 60_000);

it('shows a read-only key the regulations and suppressions without Preview, Create or Lift', async () => {
  const readOnly = await a.keyWith(['regulations.read']);
  const page = await signedIn(readOnly, '#/privacy');
  await page.getByRole('region', { name: /^SUPPRESS_WITH_DELETE · 3 USER_ID subjects/ }).waitFor();
  await page.getByRole('heading', { name: 'Suppressed subjects' }).waitFor();
  expect(await page.getByRole('heading', { name: 'New regulation' }).count()).toBe(0);
  expect(await page.getByRole('button', { name: /Preview|Create|Lift/ }).count()).toBe(0);
  await shot(page, 'privacy-read-only');
  await page.close();

  // A key without regulations.read is told which scope it lacks.
  const other = await signedIn(await a.keyWith(['apps.read']), '#/privacy');
  await other.getByText('regulations.read').first().waitFor();
  await other.close();
}, 60_000);

it("shows another account none of this account's regulations or suppressions", async () => {
  const page = await signedIn(b.key, '#/privacy');
  await page.getByText('No regulations.').waitFor();
  await page.getByText('No subject is suppressed.').waitFor();
  await page.close();
  // And its warehouse still holds Alice: the dry run of B counts her rows.
  const dryRun = await h
    .as(b.key)
    .post('/api/v1/regulations')
    .send({ regulationType: 'DELETE_INTERNAL', subjectType: 'USER_ID', subjectIds: [ALICE], dryRun: true });
  expect(dryRun.body.data.warehouses[0].rows).toEqual({ events: 1, users: 1, groups: 0, aliases: 0 });
}, 60_000);
