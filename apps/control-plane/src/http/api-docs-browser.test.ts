import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { type Browser } from 'playwright-core';
import { launchChromium } from '../testing/chromium';
import { startHarness, type Harness } from '../testing/harness';

// /docs as a browser sees it under its Content-Security-Policy: served by the real control
// plane on a real port, rendered by headless Chromium, saved as .reports/docs/api-docs.png.
// Swagger UI must draw the operations, and the browser must report no CSP violation.

const SCREENSHOTS = path.resolve(__dirname, '../../../../.reports/docs');

describe('/docs in headless Chromium under its CSP', () => {
  let h: Harness;
  let server: Server;
  let base: string;
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(SCREENSHOTS, { recursive: true });
    h = await startHarness('api docs browser');
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  it('renders the operations with no CSP violation, no page error and no request elsewhere', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(30_000);
    const problems: string[] = [];
    const foreign: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(e.message));
    page.on('request', (r) => {
      if (!r.url().startsWith(base) && !r.url().startsWith('data:')) foreign.push(r.url());
    });
    // Violations also reach the page as events, including those the console does not print.
    await page.addInitScript(() => {
      const seen: string[] = [];
      (window as unknown as { cspViolations: string[] }).cspViolations = seen;
      document.addEventListener('securitypolicyviolation', (e) =>
        seen.push(`${e.violatedDirective} ${e.blockedURI}`),
      );
    });

    const response = await page.goto(`${base}/docs/`);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    // The list of operations, drawn from /api/v1/openapi.json.
    await page.locator('.opblock-summary-path', { hasText: '/api/v1/apps' }).first().waitFor();
    const operations = await page.locator('.opblock').count();
    expect(operations).toBeGreaterThan(20);
    await page.screenshot({ path: path.join(SCREENSHOTS, 'api-docs.png') });
    // Authorize with a key, then "Try it out" on GET /api/v1/sources: the call goes to this
    // origin (connect-src 'self') and its answer is drawn.
    const tenant = await h.tenant();
    await page.locator('.auth-wrapper .authorize').click();
    await page.locator('.auth-container input').first().fill(tenant.key);
    await page.locator('.auth-btn-wrapper .authorize').first().click();
    await page.locator('.auth-btn-wrapper .btn-done').first().click();
    const sources = page.locator('.opblock', {
      has: page.locator('.opblock-summary-path', { hasText: /^\/api\/v1\/sources$/ }),
    });
    await sources.locator('.opblock-summary').first().click();
    await sources.locator('.try-out__btn').first().click();
    await sources.locator('.execute').first().click();
    const status = sources.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor();
    expect((await status.innerText()).trim()).toBe('200');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'api-docs-try-it-out.png') });

    const violations = await page.evaluate(
      () => (window as unknown as { cspViolations: string[] }).cspViolations,
    );
    expect({ violations, problems, foreign }).toEqual({ violations: [], problems: [], foreign: [] });
    await page.close();
  });
});
