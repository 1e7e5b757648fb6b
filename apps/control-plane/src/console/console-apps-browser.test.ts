import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser, type Page } from 'playwright-core';
import { startStripeLookAlike, type SourceLookAlike } from '@pipeline/connectors/testing';
import { appTypeViews } from '../app-types/app-type-views';
import type { JsonSchema } from '../app-types/app-type.dto';
import { launchChromium } from '../testing/chromium';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { consoleDirectory } from './console-files';

// The console's Apps page in Chromium, against the real control plane on a real port and the
// Stripe look-alike: a wrong key refused at its field by "Test connection", fixed, tested
// again; an app created with the keyboard alone; secrets never in the page once saved.

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/console');
const RIGHT_KEY = 'sk_test_console_right_4242';
const WRONG_KEY = 'sk_test_console_wrong_0000';

let h: Harness;
let t: Tenant;
let stripe: SourceLookAlike;
let server: Server;
let base: string;
let browser: Browser;
const openPages = new Set<Page>();

async function signedIn(key: string, hash: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.setDefaultTimeout(30_000);
  openPages.add(page);
  page.on('close', () => openPages.delete(page));
  const problems: string[] = [];
  page.on('pageerror', (e) => problems.push(e.message));
  (page as Page & { problems?: string[] }).problems = problems;
  await page.goto(`${base}/console/${hash}`);
  await page.getByLabel('API key').fill(key);
  await page.getByLabel('API key').press('Enter');
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
  return page;
}

const problemsOf = (page: Page) => (page as Page & { problems?: string[] }).problems ?? [];

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** Everything the page holds: its HTML and every input's current value. */
async function pageText(page: Page): Promise<string> {
  const values = await page.$$eval('input, textarea, select', (els) =>
    els.map((el) => (el as HTMLInputElement).value),
  );
  return `${await page.content()}\n${values.join('\n')}`;
}

/** Presses Tab (at most `max` times) until the focused element matches `accessibleName`. */
async function tabTo(page: Page, accessibleName: RegExp, max = 40): Promise<void> {
  for (let i = 0; i < max; i += 1) {
    await page.keyboard.press('Tab');
    const name = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement | null;
      if (!el) return '';
      const labelled = (el as HTMLInputElement).labels?.[0]?.textContent ?? '';
      return `${labelled} ${el.textContent ?? ''}`.trim();
    });
    if (accessibleName.test(name)) return;
  }
  throw new Error(`no element named ${accessibleName} within ${max} tabs`);
}

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
      `${name}: ${page.url()}\n${text.slice(0, 2_000)}\nerrors: ${problemsOf(page).join(' | ')}\nserver: ${serverErrors.join('')}\n`,
    );
    await page.close();
  }
});

beforeAll(async () => {
  if (!consoleDirectory()) throw new Error('apps/console/dist is missing: build @pipeline/console first');
  mkdirSync(SCREENSHOTS, { recursive: true });
  stripe = await startStripeLookAlike({ secret: RIGHT_KEY });
  // VENDOR_BASE_URL_STRIPE: the operator's base URL, as the process takes it from its config.
  h = await startHarness('console apps browser', { connectors: { baseUrls: { stripe: stripe.url } } });
  t = await h.tenant();
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
  await stripe?.close();
});

describe('the Apps page', () => {
  it('connects Stripe: a wrong key is refused at its field, the fixed key is saved and passes', async () => {
    const page = await signedIn(t.key, '#/apps');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await page.getByText('No apps yet').waitFor();
    await shot(page, '20-apps-empty');
    await page.getByRole('link', { name: 'Add app' }).click();
    await page.getByRole('heading', { name: 'Destinations' }).waitFor();
    await shot(page, '21-apps-catalog');
    await page.getByRole('link', { name: 'Stripe', exact: true }).click();
    await page.getByRole('heading', { name: 'Add Stripe' }).waitFor();

    // Checked in the page first: required fields and the key's pattern.
    await page.getByRole('button', { name: 'Save app' }).click();
    const secretKey = page.getByLabel('Secret key');
    await expect(secretKey.getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(page.locator('#f-credentials-secretKey-error').innerText()).resolves.toBe('Required.');
    await expect(page.locator('#f-displayName-error').innerText()).resolves.toBe('Required.');
    await expect(secretKey.getAttribute('type')).resolves.toBe('password');
    await shot(page, '22-apps-stripe-required');

    await page.getByLabel('Name').fill('Stripe payments');
    await secretKey.fill(WRONG_KEY);
    await page.getByRole('button', { name: 'Save app' }).click();
    await page.getByRole('heading', { name: 'Stripe payments' }).waitFor();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    const appId = /#\/apps\/([0-9a-f-]{36})$/.exec(page.url())?.[1];
    expect(appId).toBeDefined();
    await expect(page.locator('.facts .badge').innerText()).resolves.toBe('active');
    // Stored: shown as set, the input empty.
    await page.locator('.secret-set').waitFor();
    await expect(page.getByLabel('Secret key').inputValue()).resolves.toBe('');

    await page.getByRole('button', { name: 'Test connection' }).click();
    const error = page.locator('#f-credentials-secretKey-error');
    await error.waitFor();
    await expect(error.innerText()).resolves.toBe('refused by the vendor (stripe answered 401)');
    await expect(page.getByLabel('Secret key').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(page.getByLabel('Secret key').getAttribute('aria-describedby')).resolves.toContain(
      'f-credentials-secretKey-error',
    );
    await expect(page.getByRole('alert').innerText()).resolves.toContain('credentials_rejected');
    // The field with the error has the focus.
    await expect(page.evaluate(() => document.activeElement?.id)).resolves.toBe('f-credentials-secretKey');
    expect(stripe.requests.at(-1)?.status).toBe(401);
    await shot(page, '23-apps-stripe-key-refused');

    await page.getByLabel('Secret key').fill(RIGHT_KEY);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await expect(page.getByLabel('Secret key').inputValue()).resolves.toBe('');
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByRole('status').filter({ hasText: 'Connection test passed.' }).waitFor();
    expect(stripe.requests.at(-1)?.status).toBe(200);
    await expect(page.locator('#f-credentials-secretKey-error').count()).resolves.toBe(0);
    await shot(page, '24-apps-stripe-connected');

    // An edit that types no secret keeps the stored one (the PATCH has no credentials).
    await page.getByLabel('API version').fill('2025-09-30.clover');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved.' }).waitFor();
    await page.getByRole('button', { name: 'Test connection' }).click();
    await page.getByRole('status').filter({ hasText: 'Connection test passed.' }).waitFor();
    await expect(page.locator('.secret-set').count()).resolves.toBe(1);
    const kept = await h.as(t.key).get(`/api/v1/apps/${appId}`);
    expect(kept.body.data.config).toEqual({ apiVersion: '2025-09-30.clover' });
    expect(Object.keys(kept.body.data.credentials)).toEqual(['secretKey']);

    // Neither key is anywhere in the page once saved.
    const text = await pageText(page);
    expect(text).not.toContain(RIGHT_KEY);
    expect(text).not.toContain(WRONG_KEY);
    // The API stored the fixed key: the app's connection test passes through the API too.
    const tested = await h.as(t.key).post(`/api/v1/apps/${appId}/test-connection`);
    expect(tested.status).toBe(200);

    // The list shows it; disable removes the credentials (inactive), delete asks first.
    await page.goto(`${base}/console/#/apps`);
    await page.getByRole('link', { name: 'Stripe payments' }).click();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Disable app' }).click();
    await page.locator('.facts .badge', { hasText: 'inactive' }).waitFor();
    await page.getByRole('button', { name: 'Delete' }).click();
    await shot(page, '25-apps-delete-confirm');
    await page.getByRole('button', { name: 'Delete app' }).click();
    await page.getByText('No apps yet').waitFor();
    const gone = await h.as(t.key).get(`/api/v1/apps/${appId}`);
    expect(gone.body.data.state).toBe('deleted');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  it("shows the API's refusal of a config URL at its field", async () => {
    const page = await signedIn(t.key, '#/apps/new/segment');
    await page.getByRole('heading', { name: 'Add Segment' }).waitFor();
    await page.getByLabel('Name').fill('Segment copy');
    await page.getByLabel('Write key').fill('segment-write-key-1');
    // In the form the endpoint's pattern holds; the API refuses the loopback host.
    await page.getByLabel('Endpoint').fill('https://127.0.0.1/v1');
    await page.getByRole('button', { name: 'Save app' }).click();
    const error = page.locator('#f-config-endpoint-error');
    await error.waitFor();
    await expect(page.getByLabel('Endpoint').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(page.getByRole('alert').innerText()).resolves.toContain('url_not_allowed');
    await shot(page, '25b-apps-segment-url-refused');
    await page.getByLabel('Endpoint').fill('');
    await page.getByRole('button', { name: 'Save app' }).click();
    await page.getByRole('heading', { name: 'Segment copy' }).waitFor();
    expect(await pageText(page)).not.toContain('segment-write-key-1');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  it('creates an app with the keyboard alone', async () => {
    const secret = 'amp-keyboard-secret-7f3a';
    const page = await signedIn(t.key, '#/apps');
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    await tabTo(page, /^Add app$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Destinations' }).waitFor();
    await tabTo(page, /^Amplitude$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Add Amplitude' }).waitFor();
    await tabTo(page, /^Name$/);
    await page.keyboard.type('Product analytics');
    await tabTo(page, /^API key/);
    await page.keyboard.type(secret);
    await tabTo(page, /^Region/);
    await page.keyboard.type('eu');
    await shot(page, '26-apps-keyboard-form');
    await tabTo(page, /^Save app$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Product analytics' }).waitFor();
    const apps = await h.as(t.key).get('/api/v1/apps?app_type=amplitude');
    expect(apps.body.data).toHaveLength(1);
    const detail = await h.as(t.key).get(`/api/v1/apps/${apps.body.data[0].id}`);
    expect(detail.body.data).toMatchObject({
      displayName: 'Product analytics',
      state: 'active',
      config: { region: 'eu' },
    });
    expect(Object.keys(detail.body.data.credentials)).toEqual(['apiKey']);
    // Amplitude has no connection test: no button that would answer 422.
    await expect(page.getByRole('button', { name: 'Test connection' }).count()).resolves.toBe(0);
    expect(await pageText(page)).not.toContain(secret);
    await shot(page, '27-apps-keyboard-saved');
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  it('says when stored credentials cannot be opened, and takes them typed again', async () => {
    const created = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({
        appType: 'amplitude',
        displayName: 'Sealed elsewhere',
        credentials: { apiKey: 'amp-sealed-elsewhere-1' },
      });
    expect(created.status).toBe(201);
    // As if sealed by a key this control plane does not hold (a key made anew, a lost key).
    await h.db.dataSource.query("UPDATE apps SET credentials_key_id = 'gone' WHERE id = $1", [
      created.body.data.id,
    ]);
    const page = await signedIn(t.key, `#/apps/${created.body.data.id}`);
    await page.getByRole('heading', { name: 'Sealed elsewhere' }).waitFor();
    const alert = page.getByRole('alert').filter({ hasText: 'The stored credentials cannot be opened' });
    await alert.waitFor();
    expect(await alert.innerText()).toContain('Type them again below to replace them.');
    expect(await alert.innerText()).not.toContain('gone');
    await shot(page, '28-apps-credentials-unreadable');
    await page.getByLabel(/^API key/).fill('amp-typed-again-2');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: /saved/i }).waitFor();
    await alert.waitFor({ state: 'detached' });
    const detail = await h.as(t.key).get(`/api/v1/apps/${created.body.data.id}`);
    expect([detail.body.data.credentials, detail.body.data.credentialsError]).toEqual([
      { apiKey: '**********' },
      undefined,
    ]);
    expect(problemsOf(page)).toEqual([]);
    await page.close();
  });

  it('renders every field of every app type of the catalog with a labelled input', async () => {
    const page = await signedIn(t.key, '#/apps/new');
    await page.getByRole('heading', { name: 'Add an app' }).waitFor();
    const views = appTypeViews();
    let checked = 0;
    const missing: string[] = [];
    for (const view of views) {
      await page.evaluate((type) => (location.hash = `#/apps/new/${type}`), view.appType);
      await page.getByRole('heading', { name: `Add ${view.name}` }).waitFor();
      for (const [side, schema] of [
        ['credentials', view.credentialsSchema],
        ['config', view.configSchema],
      ] as const) {
        const branches = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined;
        for (const [i, branch] of (branches ?? [schema]).entries()) {
          if (branches) await page.locator(`input[type=radio][name="f-${side}"]`).nth(i).check();
          for (const [name, field] of Object.entries(
            (branch.properties ?? {}) as Record<string, JsonSchema>,
          )) {
            const found = await describeField(
              page,
              `${view.appType}.${side}.${name}`,
              `${side}.${name}`,
              field,
            );
            if (found) missing.push(found);
            else checked += 1;
          }
        }
      }
    }
    expect(missing).toEqual([]);
    // Every property of every schema (each branch of a union counted): 15 types, 51 fields today.
    expect(checked).toBe(
      views
        .flatMap((v) => [v.credentialsSchema, v.configSchema])
        .flatMap((s) => ((s.anyOf ?? [s]) as JsonSchema[]).map((b) => Object.keys(b.properties ?? {}).length))
        .reduce((a, b) => a + b, 0),
    );
    expect(problemsOf(page)).toEqual([]);
    await page.evaluate(() => (location.hash = '#/apps/new/google_ads'));
    await page.getByRole('heading', { name: 'Add Google Ads (offline conversions)' }).waitFor();
    await page.getByRole('button', { name: 'Add conversion actions' }).click();
    await shot(page, '28-apps-google-ads-record');
    await page.evaluate(() => (location.hash = '#/apps/new/mixpanel'));
    await page.getByRole('heading', { name: 'Add Mixpanel' }).waitFor();
    await page.locator('input[type=radio][name="f-credentials"]').nth(1).check();
    await shot(page, '29-apps-mixpanel-union');

    // A type with two roles: HubSpot saved as a destination only.
    await page.evaluate(() => (location.hash = '#/apps/new/hubspot'));
    await page.getByRole('heading', { name: 'Add HubSpot' }).waitFor();
    await page.getByLabel('Name').fill('HubSpot contacts');
    await page.getByLabel('source').uncheck();
    await page.getByLabel('Access token').fill('pat-na1-keyboardless');
    await page.getByRole('button', { name: 'Save app' }).click();
    await page.getByRole('heading', { name: 'HubSpot contacts' }).waitFor();
    const hubspot = await h.as(t.key).get('/api/v1/apps?app_type=hubspot');
    expect(hubspot.body.data.map((a: { role: string[] }) => a.role)).toEqual([['destination']]);
    await page.close();
  });
});

/** Why the field at `path` is not rendered as its schema asks, or null when it is. */
async function describeField(
  page: Page,
  what: string,
  path: string,
  field: JsonSchema,
): Promise<string | null> {
  const id = `f-${path.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  const el = await page.$(`#${id}`);
  if (!el) return `${what}: no element #${id}`;
  const choices =
    field.enum ??
    ('const' in field ? [field.const] : (field.anyOf as JsonSchema[] | undefined)?.map((b) => b.const));
  const info = await el.evaluate((node) => ({
    tag: node.tagName.toLowerCase(),
    type: (node as HTMLInputElement).type,
    label: (node as HTMLInputElement).labels?.[0]?.textContent?.trim() ?? '',
    legend: node.querySelector('legend')?.textContent?.trim() ?? '',
    options: node.tagName === 'SELECT' ? [...(node as HTMLSelectElement).options].map((o) => o.value) : [],
    buttons: [...node.querySelectorAll('button')].map((b) => b.textContent ?? ''),
  }));
  if (field.type === 'object' && field.patternProperties) {
    if (info.tag !== 'fieldset' || !info.legend) return `${what}: a record without its fieldset and legend`;
    if (!info.buttons.some((b) => b.startsWith('Add '))) return `${what}: a record without an Add button`;
    return null;
  }
  if (!info.label) return `${what}: an input without a label`;
  if (field.writeOnly && info.type !== 'password') return `${what}: a secret in a ${info.type} input`;
  if (choices && choices.some((c) => !info.options.includes(String(c))))
    return `${what}: a choice of ${JSON.stringify(choices)} offering ${JSON.stringify(info.options)}`;
  if (!choices && info.tag !== 'input') return `${what}: a ${String(field.type)} in a ${info.tag}`;
  return null;
}
