import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mutatedFiles, reasonToRun } from './unchanged.mjs';

const expand = (pattern) =>
  ({
    'libs/e/src/**/*.ts': ['libs/e/src/a.ts', 'libs/e/src/a.test.ts', 'libs/e/src/b.ts'],
    'libs/e/src/**/*.test.ts': ['libs/e/src/a.test.ts'],
  })[pattern] ?? [];

test('a mutate list names files: ranges as their file, globs expanded, negated globs taken out', () => {
  assert.deepEqual(
    mutatedFiles(['apps/a/src/x.ts:3-9', 'apps/a/src/x.ts:12-20', 'apps/a/src/y.ts'], expand),
    ['apps/a/src/x.ts', 'apps/a/src/y.ts'],
  );
  assert.deepEqual(mutatedFiles(['libs/e/src/**/*.ts', '!libs/e/src/**/*.test.ts'], expand), [
    'libs/e/src/a.ts',
    'libs/e/src/b.ts',
  ]);
});

const report = {
  files: { 'm/a.ts': { source: 'A' }, 'm/b.ts': { source: 'B' } },
  testFiles: { 'm/a.test.ts': { source: 'TA' } },
};
const texts = { 'm/a.ts': 'A', 'm/b.ts': 'B', 'm/a.test.ts': 'TA', 'm/types.ts': 'T', 'm/new.test.ts': 'N' };
const read = (file) => texts[file];
const never = () => false;

test('nothing to run when every mutated and test file reads as recorded', () => {
  assert.equal(reasonToRun(report, ['m/a.ts', 'm/b.ts'], ['m/a.test.ts'], read, never), null);
});

test('a changed, new or dropped file is a reason to run', () => {
  const changed = (file, text) => (f) => (f === file ? text : texts[f]);
  assert.equal(
    reasonToRun(report, ['m/a.ts', 'm/b.ts'], ['m/a.test.ts'], changed('m/b.ts', 'B2'), never),
    'm/b.ts changed',
  );
  assert.equal(
    reasonToRun(report, ['m/a.ts', 'm/b.ts'], ['m/a.test.ts'], changed('m/a.test.ts', 'TA2'), never),
    'm/a.test.ts changed',
  );
  assert.equal(
    reasonToRun(report, ['m/a.ts', 'm/b.ts', 'm/c.ts'], ['m/a.test.ts'], read, never),
    'm/c.ts has no recorded results',
  );
  assert.equal(reasonToRun(report, ['m/a.ts'], ['m/a.test.ts'], read, never), 'm/b.ts is no longer mutated');
  assert.equal(
    reasonToRun(report, ['m/a.ts', 'm/b.ts'], ['m/a.test.ts', 'm/new.test.ts'], read, never),
    'm/new.test.ts has no recorded results',
  );
});

test('a file with nothing to mutate is current while it is as it was when the report was committed', () => {
  const unchanged = (file) => file === 'm/types.ts';
  assert.equal(
    reasonToRun(report, ['m/a.ts', 'm/b.ts', 'm/types.ts'], ['m/a.test.ts'], read, unchanged),
    null,
  );
  assert.equal(
    reasonToRun(report, ['m/a.ts', 'm/b.ts', 'm/types.ts'], ['m/a.test.ts'], read, never),
    'm/types.ts has no recorded results',
  );
});
