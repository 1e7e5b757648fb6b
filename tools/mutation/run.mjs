#!/usr/bin/env node
// `pnpm test:mutation [module...]`: runs StrykerJS on each module that has a stryker.config.mjs
// (libs/* and apps/*), one after the other, from the repository root. A module is named by its
// folder (`events`, `control-plane`). Prints each module's duration; exits non-zero when any
// module fails or scores under its break threshold.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { list: { type: 'boolean', default: false } },
});

const configured = ['libs', 'apps'].flatMap((group) =>
  readdirSync(path.join(root, group), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(path.join(root, group, d.name, 'stryker.config.mjs')))
    .map((d) => ({ name: d.name, config: `${group}/${d.name}/stryker.config.mjs` })),
);

if (values.list) {
  for (const { name, config } of configured) console.log(`${name}\t${config}`);
  process.exit(0);
}

const unknown = positionals.filter((name) => !configured.some((m) => m.name === name));
if (unknown.length > 0) {
  console.error(`no stryker.config.mjs for: ${unknown.join(', ')}`);
  console.error(`configured: ${configured.map((m) => m.name).join(', ')}`);
  process.exit(2);
}
const selected = positionals.length > 0 ? configured.filter((m) => positionals.includes(m.name)) : configured;

const results = [];
for (const { name, config } of selected) {
  console.log(`\n== mutation testing: ${name} (${config})`);
  const started = process.hrtime.bigint();
  const run = spawnSync('pnpm', ['exec', 'stryker', 'run', config], { cwd: root, stdio: 'inherit' });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  results.push({ name, ok: run.status === 0, seconds });
}

console.log('\nmodule\tresult\tseconds');
for (const { name, ok, seconds } of results)
  console.log(`${name}\t${ok ? 'passed' : 'FAILED'}\t${seconds.toFixed(0)}`);
process.exit(results.every((r) => r.ok) ? 0 : 1);
