#!/usr/bin/env node
// Copies the management API's OpenAPI document, as tsoa generates it from the control plane's
// controllers (apps/control-plane/src/generated/openapi.json, made by `nx run
// @pipeline/control-plane:generate`, which every build runs), to docs/openapi.json.
//
//   node tools/docs/generate-openapi.mjs           write docs/openapi.json
//   node tools/docs/generate-openapi.mjs --check   exit 1 when it differs from tsoa's
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const source = join(repo, 'apps/control-plane/src/generated/openapi.json');
const target = join(repo, 'docs/openapi.json');
const check = process.argv.includes('--check');

if (!existsSync(source)) {
  console.error(
    'apps/control-plane/src/generated/openapi.json is missing: run pnpm docs:generate (or build the control plane)',
  );
  process.exit(1);
}
const prettier = createRequire(import.meta.url)(
  createRequire(import.meta.url).resolve('prettier', { paths: [repo] }),
);
const options = (await prettier.resolveConfig(target)) ?? {};
const text = await prettier.format(JSON.stringify(JSON.parse(readFileSync(source, 'utf8')), null, 2), {
  ...options,
  filepath: target,
});

if (check) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (current !== text) {
    console.error(
      'docs/openapi.json is stale: it differs from what tsoa generates from the controllers. Run `pnpm docs:generate` and commit the result.',
    );
    process.exit(1);
  }
  console.log('docs/openapi.json matches what tsoa generates');
} else {
  writeFileSync(target, text);
  console.log(`wrote docs/openapi.json (${Object.keys(JSON.parse(text).paths).length} paths)`);
}
