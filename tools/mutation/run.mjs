#!/usr/bin/env node
// `pnpm test:mutation [--full] [module...]`: runs StrykerJS on each module that has a
// stryker.config.mjs (libs/* and apps/*), one after the other, from the repository root. A module
// is named by its folder (`events`, `control-plane`).
//
// Incremental by default: Stryker reuses the results kept in tools/mutation/incremental/<module>.json
// (committed) for every mutant whose code and covering tests did not change, and runs the rest.
// `--full` runs every mutant and rewrites those files: do that after changing code a mutated file
// imports without being mutated itself (Stryker cannot see such a change), and before committing a
// change of the thresholds.
//
// Exits non-zero when a module fails, scores under its break threshold, or scores so far above it
// that the threshold no longer holds its score (docs/testing.md#mutation-testing).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { mutationModules, mutationOptions } from './modules.mjs';
import { incrementalFile, recordedScore, requiredBreak } from './mutation-score.mjs';
import { whyRun } from './unchanged.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { list: { type: 'boolean', default: false }, full: { type: 'boolean', default: false } },
});

const configured = mutationModules(root);

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

/**
 * Keeps the committed file small and stable: a mutant's status reason is the first line of what
 * killed it, without the random sandbox path and the stack; the absolute project root and the
 * resolved options (neither read back by Stryker's incremental diff) are dropped.
 */
function tidyIncrementalFile(file) {
  if (!existsSync(file)) return;
  const report = JSON.parse(readFileSync(file, 'utf8'));
  for (const source of Object.values(report.files)) {
    for (const mutant of source.mutants) {
      if (typeof mutant.statusReason === 'string') {
        mutant.statusReason = mutant.statusReason
          .split('\n')[0]
          .replace(/\/\S*\.stryker-tmp\/[^/]+\/sandbox-[^/]+\//g, '')
          .slice(0, 200);
      }
    }
  }
  delete report.projectRoot;
  delete report.config;
  writeFileSync(file, `${formatReport(report)}\n`);
}

/** JSON with one mutant, and one test, per line: a re-run's diff shows which results changed. */
function formatReport(value, depth = 0) {
  if (depth >= 4 || value === null || typeof value !== 'object') return JSON.stringify(value);
  const indent = ' '.repeat(depth + 1);
  const close = ' '.repeat(depth);
  const items = Array.isArray(value)
    ? value.map((item) => formatReport(item, depth + 1))
    : Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${formatReport(item, depth + 1)}`);
  if (items.length === 0) return Array.isArray(value) ? '[]' : '{}';
  const [open, end] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  return `${open}\n${items.map((item) => indent + item).join(',\n')}\n${close}${end}`;
}

const results = [];
for (const { name, config } of selected) {
  console.log(`\n== mutation testing${values.full ? ' (full)' : ''}: ${name} (${config})`);
  const breakAtNow = (await mutationOptions(root, config)).thresholds.break;
  if (!values.full) {
    const options = await mutationOptions(root, config);
    const why = whyRun(root, {
      dir: path.dirname(config),
      config,
      options,
      reportFile: incrementalFile(name),
    });
    if (!why) {
      // The committed report is what this run would write (tools/mutation/unchanged.mjs).
      console.log('nothing it mutates or runs changed since its committed results: not run');
      const score = recordedScore(root, name);
      const problems =
        score !== undefined && breakAtNow < requiredBreak(score.score)
          ? [`scores ${score.score.toFixed(2)}: its break must be at least ${requiredBreak(score.score)}`]
          : [];
      if (score !== undefined && score.score < breakAtNow)
        problems.push(`scores ${score.score.toFixed(2)}, under its break ${breakAtNow}`);
      results.push({ name, score, breakAt: breakAtNow, seconds: 0, problems });
      continue;
    }
    console.log(`runs: ${why}`);
  }
  const started = process.hrtime.bigint();
  const args = ['exec', 'stryker', 'run', config, ...(values.full ? ['--force'] : [])];
  const run = spawnSync('pnpm', args, { cwd: root, stdio: 'inherit' });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const reportFile = path.join(root, incrementalFile(name));
  tidyIncrementalFile(reportFile);
  const breakAt = (await mutationOptions(root, config)).thresholds.break;
  const score = recordedScore(root, name);
  const problems = [];
  if (run.status !== 0) problems.push(`stryker exited with ${run.status}`);
  if (score !== undefined && breakAt < requiredBreak(score.score)) {
    problems.push(
      `scores ${score.score.toFixed(2)}: its break must be at least ${requiredBreak(score.score)} ` +
        `(the score minus 2 points, never under 85); raise breakAt in ${config}`,
    );
  }
  results.push({ name, score, breakAt, seconds, problems });
}

console.log('\nmodule\tresult\tscore\tbreak\tmutants\tsurvived\tno cov\tseconds');
for (const { name, score, breakAt, seconds, problems } of results) {
  console.log(
    [
      name,
      problems.length === 0 ? 'passed' : 'FAILED',
      score?.score.toFixed(2) ?? '-',
      breakAt,
      score?.total ?? '-',
      score?.survived ?? '-',
      score?.noCoverage ?? '-',
      seconds.toFixed(0),
    ].join('\t'),
  );
  for (const problem of problems) console.log(`  ${name}: ${problem}`);
}
process.exit(results.every((r) => r.problems.length === 0) ? 0 : 1);
