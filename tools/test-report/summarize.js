// Sums the per-project jest reports and the smoke checks into the run's closing line.
const fs = require('node:fs');
const path = require('node:path');

const dir = process.argv[2];
const totals = { passed: 0, failed: 0, skipped: 0 };
for (const file of fs.existsSync(dir) ? fs.readdirSync(dir).sort() : []) {
  const report = JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'));
  console.log(
    `  ${report.project.padEnd(28)} ${report.passed} passed, ${report.failed} failed, ${report.skipped} skipped`,
  );
  totals.passed += report.passed;
  totals.failed += report.failed;
  totals.skipped += report.skipped;
}
console.log(`tests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed > 0 || totals.passed === 0 ? 1 : 0);
