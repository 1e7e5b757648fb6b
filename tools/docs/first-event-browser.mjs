#!/usr/bin/env node
// Opens the page of README's "Your first event", step 4, in headless Chromium as a reader
// would: loads it, clicks its button, and waits until the SDK has sent what it queued.
//
//   node tools/docs/first-event-browser.mjs http://localhost:8000
//
// Exit 0 when the SDK loaded and its requests to /collect were answered 2xx; prints what the
// browser saw otherwise. CHROMIUM_PATH chooses the binary (default /usr/bin/chromium).
/* global window -- the callbacks of page.evaluate run in the page, not in Node */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const url = process.argv[2];
if (!url) {
  console.error('usage: node tools/docs/first-event-browser.mjs <page url>');
  process.exit(2);
}
// playwright-core is a development dependency of the ingestion service's browser tests.
const require = createRequire(fileURLToPath(new URL('../../apps/ingestion/package.json', import.meta.url)));
const { chromium } = require('playwright-core');

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
});
const seen = [];
const within = (ms, promise, what) =>
  Promise.race([
    promise,
    new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms).unref(),
    ),
  ]);
try {
  const page = await browser.newPage();
  page.on('console', (message) => seen.push(`console.${message.type()}: ${message.text()}`));
  page.on('pageerror', (error) => seen.push(`page error: ${error.message}`));
  const answers = [];
  page.on('response', (response) => {
    if (new URL(response.url()).pathname === '/collect') answers.push(response.status());
  });
  await page.goto(url, { waitUntil: 'load', timeout: 15_000 });
  await within(
    15_000,
    page.evaluate(() => window.analytics.ready()),
    'the SDK loading',
  );
  await page.click('button', { timeout: 5_000 });
  // flush() resolves when the requests of what was queued have ended.
  await within(
    15_000,
    page.evaluate(() => window.analytics.flush()),
    'the SDK sending its queue',
  );
  const posted = answers.filter((status) => status !== 204);
  if (posted.length === 0 || posted.some((status) => status < 200 || status >= 300)) {
    throw new Error(`/collect answered ${JSON.stringify(answers)}`);
  }
  console.log(`the page's events were sent: /collect answered ${posted.join(', ')}`);
} catch (error) {
  console.error(`${error.message}\n${seen.join('\n')}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
