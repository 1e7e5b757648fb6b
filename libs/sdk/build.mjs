/* eslint-disable no-console -- a build script reports to the terminal */
// Bundles the SDK into the one file the ingestion service serves at /v1/sdk.js: a minified
// IIFE for browsers of the last years (ES2018), and reports its size against the budget.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const GZIP_BUDGET_BYTES = 15 * 1024;
const outfile = 'dist/sdk.js';

await build({
  entryPoints: ['src/browser.ts'],
  outfile,
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['es2018'],
  platform: 'browser',
  legalComments: 'none',
  logLevel: 'warning',
});

const code = readFileSync(outfile);
const gzipped = gzipSync(code, { level: 9 }).length;
console.log(
  `${outfile}: ${(code.length / 1024).toFixed(1)} KiB minified, ${(gzipped / 1024).toFixed(1)} KiB gzipped`,
);
if (gzipped > GZIP_BUDGET_BYTES) {
  console.error(`${outfile} is over its budget of ${GZIP_BUDGET_BYTES / 1024} KiB gzipped`);
  process.exit(1);
}
