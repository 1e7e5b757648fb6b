import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// No test reads a database it did not create. The fixed `warehouse` and `pipeline` databases
// exist only where a dev stack or an earlier step made them: on a fresh cluster (tools/test.sh
// starts one per run) a suite that reads them fails, and on a used machine it passes by luck.
// Suites make their own (createScratchDatabase, the control plane's startScratchWarehouse).

const repo = path.resolve(__dirname, '../../..');

/** Test files and test helpers (src/testing) of every app and library. */
function testSources(dir: string, inTesting = false): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (name === 'node_modules' || name === 'dist') return [];
    if (statSync(full).isDirectory()) return testSources(full, inTesting || name === 'testing');
    const isTest = name.endsWith('.test.ts') || (inTesting && name.endsWith('.ts'));
    return isTest && full !== __filename ? [full] : [];
  });
}

/** What in `text` names a fixed database: one finding per line, as `line: text`. */
function fixedDatabaseReferences(text: string): string[] {
  const patterns = [
    // The control plane's default warehouse URL (127.0.0.1:5432/warehouse).
    /\bDEFAULT_WAREHOUSE_URL\b/,
    // A URL naming the fixed databases on a real port (port 1 is the tests' unreachable server).
    /postgres(?:ql)?:\/\/[^'"`\s]*:(?!1\/)\d+\/(?:warehouse|pipeline)\b/,
  ];
  // Comment lines may name them (to say why not).
  const comment = /^\s*(?:\/\/|\*|\/\*)/;
  return text
    .split('\n')
    .flatMap((line, i) =>
      !comment.test(line) && patterns.some((p) => p.test(line)) ? [`${i + 1}: ${line.trim()}`] : [],
    );
}

describe('tests and test helpers name no fixed database', () => {
  it('finds the fixed names it looks for, and not the unreachable one', () => {
    expect(
      fixedDatabaseReferences('const r = new WarehouseReader(DEFAULT_WAREHOUSE_URL);\nconst x = 1;'),
    ).toEqual(['1: const r = new WarehouseReader(DEFAULT_WAREHOUSE_URL);']);
    expect(fixedDatabaseReferences("psql('postgres://postgres@127.0.0.1:5432/warehouse')")).toHaveLength(1);
    expect(
      fixedDatabaseReferences("new Pool({ connectionString: 'postgresql://h:6543/pipeline' })"),
    ).toHaveLength(1);
    expect(
      fixedDatabaseReferences("new WarehouseWriter('postgres://postgres@127.0.0.1:1/warehouse')"),
    ).toEqual([]);
    expect(fixedDatabaseReferences("databaseName('postgres://u:p@h:5432/my%20db')")).toEqual([]);
  });

  it('holds for every app and library', () => {
    const files = ['apps', 'libs'].flatMap((top) =>
      readdirSync(path.join(repo, top))
        .map((name) => path.join(repo, top, name, 'src'))
        .filter((src) => statSync(src, { throwIfNoEntry: false })?.isDirectory())
        .flatMap((src) => testSources(src)),
    );
    // The suites are there to be read: an empty list would make the check pass by itself.
    expect(files.length).toBeGreaterThan(100);
    const findings = files.flatMap((file) =>
      fixedDatabaseReferences(readFileSync(file, 'utf8')).map((f) => `${path.relative(repo, file)}:${f}`),
    );
    expect(findings).toEqual([]);
  });
});
