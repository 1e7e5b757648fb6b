#!/usr/bin/env node
// A step of the test command: the mutation configs keep what they guard.
// - Every module's break threshold is at least 85.
// - Every change since this check was added (each commit of main's first-parent line against the
//   one before it, a merge as a whole, then uncommitted changes against HEAD) that lowers a
//   module's break or narrows its mutate list adds a line to docs/testing.md's "Lowered thresholds
//   and narrowed scopes" section naming the module: "- `module` (what changed): why".
// The rule itself is tools/mutation/scope-change.mjs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mutationModules, mutationOptions } from './modules.mjs';
import { REASONS_HEADING, modulesGivenReasons, scopeLosses, scopeUnit } from './scope-change.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FLOOR = 85;
const git = (...args) =>
  execFileSync('git', args, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 }).trim();

/** Each module's break and mutate units in the tree at `dir` (a checkout or an extracted commit). */
async function declarations(dir) {
  const readSource = (file) =>
    existsSync(path.join(dir, file)) ? readFileSync(path.join(dir, file), 'utf8') : undefined;
  const modules = new Map();
  for (const { name, config } of mutationModules(dir)) {
    const options = await mutationOptions(dir, config);
    modules.set(name, {
      breakAt: options.thresholds.break,
      units: options.mutate.map((unit) => scopeUnit(unit, readSource)),
    });
  }
  return modules;
}

/** The tree of a commit, extracted where its configs can be imported (they read sources). */
async function declarationsAt(rev) {
  const dir = mkdtempSync(path.join(tmpdir(), 'mutation-configs-'));
  try {
    execFileSync(
      'sh',
      ['-c', `git archive "${rev}" apps libs tools ':!tools/mutation/incremental' | tar -x -C "${dir}"`],
      {
        cwd: root,
      },
    );
    return await declarations(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const docsAt = (rev) => {
  try {
    return git('show', `${rev}:docs/testing.md`);
  } catch {
    return '';
  }
};

const touchesConfigs = (files) =>
  files.some((f) => f.endsWith('stryker.config.mjs') || f === 'tools/mutation/base-config.mjs');

const problems = [];
function judge(label, before, after, docsBefore, docsAfter) {
  const explained = modulesGivenReasons(docsBefore, docsAfter);
  for (const module of new Set([...before.keys(), ...after.keys()])) {
    const losses = scopeLosses(before.get(module), after.get(module));
    if (losses.length > 0 && !explained.has(module)) {
      problems.push(
        `${label}: ${module}: ${losses.join('; ')}, without a line for \`${module}\` under "${REASONS_HEADING}" in docs/testing.md`,
      );
    }
  }
}

const current = await declarations(root);
for (const [module, { breakAt }] of current) {
  if (breakAt < FLOOR) problems.push(`${module}: break ${breakAt} is under the floor of ${FLOOR}`);
}

const added = git('log', '--format=%H', '--diff-filter=A', '--', 'tools/mutation/check-configs.mjs')
  .split('\n')
  .filter(Boolean)
  .pop();
let checked = 0;
if (added) {
  for (const commit of git('rev-list', '--first-parent', '--reverse', `${added}..HEAD`)
    .split('\n')
    .filter(Boolean)) {
    const parent = `${commit}^1`;
    if (!touchesConfigs(git('diff', '--name-only', parent, commit).split('\n'))) continue;
    checked += 1;
    judge(
      git('log', '-1', '--format=%h %s', commit),
      await declarationsAt(parent),
      await declarationsAt(commit),
      docsAt(parent),
      docsAt(commit),
    );
  }
} else {
  console.log(
    'check-configs: the commit that added this check is not in this clone; checking uncommitted changes only',
  );
}
const uncommitted = [
  ...git('diff', '--name-only', 'HEAD').split('\n'),
  ...git('ls-files', '--others', '--exclude-standard').split('\n'),
].filter(Boolean);
if (touchesConfigs(uncommitted)) {
  const docsNow = existsSync(path.join(root, 'docs/testing.md'))
    ? readFileSync(path.join(root, 'docs/testing.md'), 'utf8')
    : '';
  judge('uncommitted changes', await declarationsAt('HEAD'), current, docsAt('HEAD'), docsNow);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  process.exit(1);
}
console.log(
  `check-configs: ${current.size} modules, breaks ${[...current.values()].map((m) => m.breakAt).join(', ')}; ` +
    `${checked} commit(s) that changed a config since this check was added keep or explain their scopes`,
);
