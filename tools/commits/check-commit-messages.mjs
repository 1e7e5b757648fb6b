#!/usr/bin/env node
// Holds every commit after the baseline (the last one before the rule) to the message shape of
// CONTRIBUTING.md: `<area>: <what changed>` in at most 72 characters, a blank line, a body.
// Merge commits too: `git log --oneline` is read as the changelog.
//
//   node tools/commits/check-commit-messages.mjs [<revision>]   checks BASELINE..<revision> (HEAD)
//
// In a shallow clone without the baseline it says so and checks the commits it has: they all
// come after the baseline, or the baseline would be among them.
import { execFileSync } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BASELINE, messageProblems } from './commit-message.mjs';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const git = (...args) => execFileSync('git', args, { cwd: repo, encoding: 'utf8', maxBuffer: 64 << 20 });
const revision = process.argv[2] ?? 'HEAD';

function hasCommit(rev) {
  try {
    execFileSync('git', ['cat-file', '-e', `${rev}^{commit}`], { cwd: repo, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

let range = [`${BASELINE}..${revision}`];
let scope = `after ${BASELINE.slice(0, 7)}`;
if (!hasCommit(BASELINE)) {
  const shallow = git('rev-parse', '--is-shallow-repository').trim() === 'true';
  console.log(
    `the baseline ${BASELINE.slice(0, 7)} is not in this ${shallow ? 'shallow clone' : 'repository'}: ` +
      `checking the ${git('rev-list', '--count', revision).trim()} commits it has` +
      (shallow ? ' (`git fetch --unshallow` checks exactly the commits after the baseline)' : ''),
  );
  range = [revision];
  scope = 'in this clone';
}

// NUL between commits: a message cannot hold one.
const commits = git('log', '-z', '--format=%H%n%B', ...range)
  .split('\0')
  .filter((entry) => entry !== '')
  .map((entry) => {
    const newline = entry.indexOf('\n');
    return { hash: entry.slice(0, newline), message: entry.slice(newline + 1) };
  });

let bad = 0;
for (const { hash, message } of commits) {
  const problems = messageProblems(message);
  if (problems.length === 0) continue;
  bad += 1;
  console.error(`${hash.slice(0, 10)} ${message.split('\n')[0]}`);
  for (const problem of problems) console.error(`  - ${problem}`);
}
if (bad > 0) {
  console.error(
    `${bad} of ${commits.length} commits do not keep the message shape of CONTRIBUTING.md ("Commit messages"): ` +
      'reword them (git rebase -i, `reword`) before they are merged',
  );
  process.exit(1);
}
console.log(
  `commit messages: ${commits.length} commit${commits.length === 1 ? '' : 's'} ${scope}, ` +
    'each `<area>: <what changed>`, a blank line and a body',
);
