import assert from 'node:assert/strict';
import { test } from 'node:test';
import { modulesGivenReasons, reasonLines, scopeLosses, scopeUnit } from './scope-change.mjs';

const source = [
  'import x from "y";',
  '',
  'export function parse(a) {',
  '  return a;',
  '}',
  'export class Window {',
  '}',
  'const TABLE: Record<string, number> = {',
].join('\n');
const read = (file) => (file === 'apps/a/src/limits.ts' ? source : undefined);

test('a range becomes file#name of what its first line declares; anything else stays as written', () => {
  assert.equal(scopeUnit('apps/a/src/limits.ts:3-5', read), 'apps/a/src/limits.ts#parse');
  assert.equal(scopeUnit('apps/a/src/limits.ts:6-7', read), 'apps/a/src/limits.ts#Window');
  assert.equal(scopeUnit('apps/a/src/limits.ts:8-9', read), 'apps/a/src/limits.ts#TABLE');
  assert.equal(scopeUnit('apps/a/src/limits.ts:1-2', read), 'apps/a/src/limits.ts:1-2');
  assert.equal(scopeUnit('apps/a/src/gone.ts:1-2', read), 'apps/a/src/gone.ts:1-2');
  assert.equal(scopeUnit('libs/e/src/**/*.ts', read), 'libs/e/src/**/*.ts');
  assert.equal(scopeUnit('!libs/e/src/**/*.test.ts', read), '!libs/e/src/**/*.test.ts');
});

const scope = (breakAt, ...units) => ({ breakAt, units });

test('keeping or widening a scope and raising the break lose nothing', () => {
  assert.deepEqual(scopeLosses(scope(90, 'a.ts'), scope(90, 'a.ts')), []);
  assert.deepEqual(scopeLosses(scope(90, 'a.ts'), scope(95, 'a.ts', 'b.ts')), []);
  assert.deepEqual(scopeLosses(scope(90, 'src/a.ts#parse'), scope(90, 'src/a.ts')), []);
  assert.deepEqual(scopeLosses(scope(90, 'src/a.ts#parse'), scope(90, 'src/**/*.ts')), []);
  assert.deepEqual(scopeLosses(undefined, scope(85, 'new.ts')), []);
  assert.deepEqual(scopeLosses(scope(90, 'a.ts', '!a.test.ts'), scope(90, 'a.ts')), []);
});

test('a lower break, a dropped entry, a new exclusion and a deleted config are each named', () => {
  assert.deepEqual(scopeLosses(scope(90, 'a.ts'), scope(89, 'a.ts')), ['break lowered from 90 to 89']);
  assert.deepEqual(scopeLosses(scope(90, 'a.ts', 'b.ts'), scope(90, 'a.ts')), ['no longer mutates b.ts']);
  assert.deepEqual(scopeLosses(scope(90, 'src/a.ts'), scope(90, 'src/a.ts#parse')), [
    'no longer mutates src/a.ts',
  ]);
  assert.deepEqual(scopeLosses(scope(90, 'src/a.ts#parse'), scope(90, 'src/**/*.ts', '!src/a.ts')), [
    'no longer mutates src/a.ts#parse',
    'now leaves out src/a.ts',
  ]);
  assert.deepEqual(scopeLosses(scope(90, 'src/a.ts#parse'), scope(90, 'src/a.ts#format')), [
    'no longer mutates src/a.ts#parse',
  ]);
  assert.deepEqual(scopeLosses(scope(90, 'a.ts'), undefined), ['its stryker.config.mjs was deleted']);
  assert.deepEqual(scopeLosses(scope(92, 'a.ts', 'b.ts'), scope(90, 'a.ts', '!c.ts')), [
    'break lowered from 92 to 90',
    'no longer mutates b.ts',
    'now leaves out c.ts',
  ]);
});

const docs = (...lines) =>
  [
    '# Testing',
    '',
    '## Lowered thresholds and narrowed scopes',
    '',
    ...lines,
    '',
    '## Next',
    '- `events` (break 80): outside the section',
  ].join('\n');

test('only reason lines of the section count, and only the ones a change added', () => {
  assert.deepEqual(reasonLines(docs('- `events` (break 90 to 88): a why', 'text', '- `tenancy` no colon')), [
    '- `events` (break 90 to 88): a why',
  ]);
  assert.deepEqual(reasonLines('# Testing\n- `events` (x): y'), []);
  const before = docs('- `events` (break 90 to 88): an old why');
  assert.deepEqual([...modulesGivenReasons(before, before)], []);
  assert.deepEqual(
    [
      ...modulesGivenReasons(
        before,
        docs('- `events` (break 90 to 88): an old why', '- `egress` (dropped b.ts): moved'),
      ),
    ],
    ['egress'],
  );
  assert.deepEqual([...modulesGivenReasons('', docs('- `events` (x): y'))], ['events']);
  assert.deepEqual([...modulesGivenReasons(before, docs('- `events` (x):'))], []);
});
