// Sums the per-project jest reports (and the bash checks' counts) into the run's closing line. The run fails when a test
// failed, when one was skipped or left as todo (a test that does not run proves nothing, and a
// committed it.skip would otherwise pass for good), when no test passed, or when a project with
// a jest.config.js wrote no report (its jest never finished).
//
//   node tools/test-report/summarize.js <report dir> [<workspace root>]
const fs = require('node:fs');
const path = require('node:path');

/** The package names of the workspace's projects that have a jest.config.js. */
function projectsWithJest(root) {
  const names = [];
  for (const group of ['apps', 'libs']) {
    const groupDir = path.join(root, group);
    if (!fs.existsSync(groupDir)) continue;
    for (const entry of fs.readdirSync(groupDir).sort()) {
      const dir = path.join(groupDir, entry);
      if (!fs.existsSync(path.join(dir, 'jest.config.js'))) continue;
      names.push(JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).name);
    }
  }
  return names;
}

/** The lines to print and whether the run passed, for the reports read and the projects expected. */
function summarize(reports, expected) {
  const lines = [];
  const problems = [];
  const totals = { passed: 0, failed: 0, skipped: 0 };
  for (const report of reports) {
    lines.push(
      `  ${report.project.padEnd(28)} ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`,
    );
    totals.passed += report.passed;
    totals.failed += report.failed;
    totals.skipped += report.skipped;
    for (const test of report.failedTests ?? []) problems.push(`failed: ${test.file}: ${test.title}`);
    for (const test of report.skippedTests ?? []) {
      problems.push(`${test.status === 'todo' ? 'todo' : 'skipped'}: ${test.file}: ${test.title}`);
    }
  }
  const reported = new Set(reports.map((report) => report.project));
  for (const project of expected) {
    if (!reported.has(project)) problems.push(`no report: ${project} (its jest did not finish)`);
  }
  if (totals.passed === 0) problems.push('no test passed');
  lines.push(...problems);
  lines.push(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  // The counts decide too, so a report whose lists miss a test still fails the run.
  return { lines, ok: totals.failed === 0 && totals.skipped === 0 && problems.length === 0 };
}

function readReports(dir) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')));
}

if (require.main === module) {
  const [dir, root = path.resolve(__dirname, '../..')] = process.argv.slice(2);
  const { lines, ok } = summarize(readReports(dir), projectsWithJest(root));
  for (const line of lines) console.log(line);
  process.exit(ok ? 0 : 1);
}

module.exports = { summarize, projectsWithJest, readReports };
