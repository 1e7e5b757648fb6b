import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (tools/lib/bootstrap.sh installs it); CHROMIUM_PATH points at another. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Headless Chromium as every browser test runs it: no sandbox (CI runs as root), and nothing
 * of its own on the network (updates, sync, QUIC), so a test sees only the requests its page
 * makes.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
