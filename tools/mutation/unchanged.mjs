// Whether a module's committed incremental report already is what a run would write: Stryker's
// incremental mode reuses every result whose mutated file and covering test files are unchanged,
// so when none of them changed (and neither did the config that chose them) a run only repeats
// its dry run and writes the same report. The test command skips such a module: 2 minutes of
// its 15. Stryker's own blind spot stays the same: code a mutated file imports without being
// mutated is not compared (`pnpm test:mutation --full` after changing such code).
import { execFileSync } from 'node:child_process';
import { existsSync, globSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The files a `mutate` list names: ranges as their file, globs expanded, `!` globs taken out. */
export function mutatedFiles(mutate, expand) {
  const isGlob = (entry) => /[*?[\]{}]/.test(entry);
  const files = new Set();
  for (const entry of mutate.filter((e) => !e.startsWith('!'))) {
    const file = entry.replace(/:\d+-\d+$/, '');
    for (const found of isGlob(file) ? expand(file) : [file]) files.add(found);
  }
  for (const entry of mutate.filter((e) => e.startsWith('!')))
    for (const found of expand(entry.slice(1))) files.delete(found);
  return [...files].sort();
}

/**
 * Why a run is needed, or null when the report covers exactly these files with these texts.
 * Stryker records no file in which it found nothing to mutate: such a file is current when it
 * has not changed since the report's commit.
 * @param {{ files: Record<string, { source: string }>, testFiles?: Record<string, { source: string }> }} report
 * @param {string[]} mutated repository-relative files the config mutates
 * @param {string[]} tests repository-relative test files the config runs
 * @param {(file: string) => string | undefined} read a file's text now
 * @param {(file: string) => boolean} unchangedSinceReport whether the file is as it was when the report was committed
 */
export function reasonToRun(report, mutated, tests, read, unchangedSinceReport) {
  for (const file of mutated) {
    if (!report.files[file]) {
      if (unchangedSinceReport(file)) continue;
      return `${file} has no recorded results`;
    }
    if (read(file) !== report.files[file].source) return `${file} changed`;
  }
  for (const file of Object.keys(report.files))
    if (!mutated.includes(file)) return `${file} is no longer mutated`;
  const recordedTests = report.testFiles ?? {};
  for (const file of tests) {
    if (!recordedTests[file]) return `${file} has no recorded results`;
    if (read(file) !== recordedTests[file].source) return `${file} changed`;
  }
  return null;
}

const git = (root, ...args) =>
  execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();

/**
 * Why the config may choose other mutants than the report holds: it (or the shared base config)
 * changed in the working tree, or in a commit after the report's last one. Unknown (no git, a
 * shallow history without those commits) counts as changed.
 */
export function configChanged(root, configFiles, reportFile) {
  try {
    if (git(root, 'status', '--porcelain', '--', ...configFiles, reportFile)) return 'uncommitted changes';
    const reportCommit = git(root, 'log', '-1', '--format=%H', '--', reportFile);
    const configCommit = git(root, 'log', '-1', '--format=%H', '--', ...configFiles);
    if (!reportCommit || !configCommit) return 'no history of the report or its config';
    execFileSync('git', ['merge-base', '--is-ancestor', configCommit, reportCommit], {
      cwd: root,
      stdio: 'ignore',
    });
    return null;
  } catch {
    return 'its config changed after its report';
  }
}

/** The reason a module must run, or null: the whole decision, for tools/mutation/run.mjs. */
export function whyRun(root, { dir, config, options, reportFile }) {
  const reportPath = path.join(root, reportFile);
  if (!existsSync(reportPath)) return 'no committed report';
  const changed = configChanged(root, [config, 'tools/mutation/base-config.mjs'], reportFile);
  if (changed) return changed;
  const expand = (pattern) => globSync(pattern, { cwd: root }).map((f) => f.split(path.sep).join('/'));
  const tests = options.jest.config.testMatch.map((t) => `${dir}/${t.replace('<rootDir>/', '')}`);
  const read = (file) => {
    const full = path.join(root, file);
    return existsSync(full) ? readFileSync(full, 'utf8') : undefined;
  };
  const reportCommit = git(root, 'log', '-1', '--format=%H', '--', reportFile);
  const unchangedSinceReport = (file) => {
    try {
      execFileSync('git', ['cat-file', '-e', `${reportCommit}:${file}`], { cwd: root, stdio: 'ignore' });
      execFileSync('git', ['diff', '--quiet', reportCommit, '--', file], { cwd: root, stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  return reasonToRun(
    JSON.parse(readFileSync(reportPath, 'utf8')),
    mutatedFiles(options.mutate, expand),
    tests.flatMap((t) => (/[*?[\]{}]/.test(t) ? expand(t) : [t])),
    read,
    unchangedSinceReport,
  );
}
