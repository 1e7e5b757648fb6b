import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../..');
const summarize = path.join(here, 'summarize.js');
const reporter = path.join(here, 'jest-summary-reporter.js');

/** A workspace with one project per name under libs/, and a report directory holding `reports`. */
function fixture(projects, reports) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'summarize-'));
  for (const name of projects) {
    const dir = path.join(root, 'libs', name.split('/')[1]);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name }));
    fs.writeFileSync(path.join(dir, 'jest.config.js'), '');
  }
  const reportDir = path.join(root, 'reports');
  fs.mkdirSync(reportDir);
  for (const report of reports) {
    fs.writeFileSync(
      path.join(reportDir, `${report.project.replace(/[^a-z0-9-]+/gi, '_')}.json`),
      JSON.stringify(report),
    );
  }
  return { root, reportDir };
}

function run(projects, reports) {
  const { root, reportDir } = fixture(projects, reports);
  const result = spawnSync(process.execPath, [summarize, reportDir, root], { encoding: 'utf8' });
  fs.rmSync(root, { recursive: true, force: true });
  return { status: result.status, lines: result.stdout.trimEnd().split('\n') };
}

const passing = (project, passed) => ({
  project,
  passed,
  failed: 0,
  skipped: 0,
  suites: 1,
  failedTests: [],
  skippedTests: [],
});

test('every test of every project passed: exit 0 and the totals last', () => {
  const { status, lines } = run(['@p/a', '@p/b'], [passing('@p/a', 3), passing('@p/b', 2)]);
  assert.equal(status, 0);
  assert.deepEqual(lines, [
    '  @p/a                         3 passed, 0 failed, 0 skipped',
    '  @p/b                         2 passed, 0 failed, 0 skipped',
    'tests: 5 passed, 0 failed, 0 skipped',
  ]);
});

test('one skipped test fails the run and is named by file and title', () => {
  const skipped = {
    ...passing('@p/a', 3),
    skipped: 1,
    skippedTests: [{ file: 'libs/a/src/a.test.ts', title: 'a parses x', status: 'pending' }],
  };
  const { status, lines } = run(['@p/a', '@p/b'], [skipped, passing('@p/b', 2)]);
  assert.equal(status, 1);
  assert.deepEqual(lines, [
    '  @p/a                         3 passed, 0 failed, 1 skipped',
    '  @p/b                         2 passed, 0 failed, 0 skipped',
    'skipped: libs/a/src/a.test.ts: a parses x',
    'tests: 5 passed, 0 failed, 1 skipped',
  ]);
});

test('a todo fails the run and is named as a todo', () => {
  const todo = {
    ...passing('@p/a', 1),
    skipped: 1,
    skippedTests: [{ file: 'libs/a/src/a.test.ts', title: 'a parses y', status: 'todo' }],
  };
  const { status, lines } = run(['@p/a'], [todo]);
  assert.equal(status, 1);
  assert.deepEqual(lines.slice(1), [
    'todo: libs/a/src/a.test.ts: a parses y',
    'tests: 1 passed, 0 failed, 1 skipped',
  ]);
});

test('a skipped count without the list still fails the run', () => {
  const { status } = run(['@p/a'], [{ project: '@p/a', passed: 1, failed: 0, skipped: 2, suites: 1 }]);
  assert.equal(status, 1);
});

test('a failed test fails the run and is named', () => {
  const failed = {
    ...passing('@p/a', 2),
    failed: 1,
    failedTests: [{ file: 'libs/a/src/a.test.ts', title: 'a rejects z' }],
  };
  const { status, lines } = run(['@p/a'], [failed]);
  assert.equal(status, 1);
  assert.deepEqual(lines.slice(1), [
    'failed: libs/a/src/a.test.ts: a rejects z',
    'tests: 2 passed, 1 failed, 0 skipped',
  ]);
});

test('a project with a jest.config.js and no report fails the run', () => {
  const { status, lines } = run(['@p/a', '@p/b'], [passing('@p/a', 3)]);
  assert.equal(status, 1);
  assert.deepEqual(lines.slice(1), [
    'no report: @p/b (its jest did not finish)',
    'tests: 3 passed, 0 failed, 0 skipped',
  ]);
});

test('no report at all fails the run', () => {
  const { status, lines } = run([], []);
  assert.equal(status, 1);
  assert.deepEqual(lines, ['no test passed', 'tests: 0 passed, 0 failed, 0 skipped']);
});

test('the reporter lists what jest skipped, left as todo and failed', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'summary-reporter-'));
  try {
    fs.writeFileSync(
      path.join(dir, 'fixture.spec.js'),
      [
        "describe('group', () => {",
        "  it('passes', () => expect(1).toBe(1));",
        "  it.skip('is skipped', () => expect(1).toBe(1));",
        "  it.todo('is to do');",
        "  it('fails', () => expect(1).toBe(2));",
        '});',
      ].join('\n'),
    );
    fs.writeFileSync(
      path.join(dir, 'jest.config.js'),
      `module.exports = { rootDir: __dirname, testMatch: ['<rootDir>/*.spec.js'], reporters: [[${JSON.stringify(reporter)}, { name: '@p/fixture' }]] };`,
    );
    const reportDir = path.join(dir, 'reports');
    const jest = spawnSync(
      process.execPath,
      [path.join(repo, 'node_modules/jest/bin/jest.js'), '-c', path.join(dir, 'jest.config.js')],
      {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, TEST_REPORT_DIR: reportDir },
      },
    );
    assert.equal(jest.status, 1, jest.stderr);
    const report = JSON.parse(fs.readFileSync(path.join(reportDir, '_p_fixture.json'), 'utf8'));
    const file = path.relative(repo, path.join(dir, 'fixture.spec.js'));
    assert.deepEqual(report, {
      project: '@p/fixture',
      passed: 1,
      failed: 1,
      skipped: 2,
      suites: 1,
      failedTests: [{ file, title: 'group fails' }],
      skippedTests: [
        { file, title: 'group is skipped', status: 'pending' },
        { file, title: 'group is to do', status: 'todo' },
      ],
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
