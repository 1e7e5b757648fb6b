/* eslint-disable no-console -- a build script reports to the terminal */
// Bundles the console into dist/: index.html (served with no-cache) and console-<hash>.js and
// console-<hash>.css (content-hashed, served with a year's cache). No inline script or style,
// so the control plane's Content-Security-Policy can stay `script-src 'self'; style-src 'self'`.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

const GZIP_BUDGET_BYTES = 80 * 1024;
const out = 'dist';
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });

const result = await build({
  entryPoints: { console: 'src/main.tsx' },
  outdir: out,
  entryNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  platform: 'browser',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs).map((f) => path.basename(f));
const js = outputs.find((f) => f.endsWith('.js'));
const css = outputs.find((f) => f.endsWith('.css'));
if (!js || !css) throw new Error(`expected one .js and one .css, got ${outputs.join(', ')}`);
const html = readFileSync('src/index.html', 'utf8')
  .replace('__JS__', `./${js}`)
  .replace('__CSS__', `./${css}`);
writeFileSync(path.join(out, 'index.html'), html);

let gzippedTotal = 0;
for (const file of [js, css, 'index.html']) {
  const bytes = readFileSync(path.join(out, file));
  const gzipped = gzipSync(bytes, { level: 9 }).length;
  gzippedTotal += gzipped;
  console.log(
    `${out}/${file}: ${(bytes.length / 1024).toFixed(1)} KiB minified, ${(gzipped / 1024).toFixed(1)} KiB gzipped`,
  );
}
if (gzippedTotal > GZIP_BUDGET_BYTES) {
  console.error(`the console is over its budget of ${GZIP_BUDGET_BYTES / 1024} KiB gzipped`);
  process.exit(1);
}
