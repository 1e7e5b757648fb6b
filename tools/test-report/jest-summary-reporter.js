// A jest reporter that writes each project's counts to $TEST_REPORT_DIR/<project>.json, so
// tools/test.sh can print one closing line for the whole run.
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  constructor(globalConfig, options) {
    this.name = options.name;
  }

  onRunComplete(_contexts, results) {
    const dir = process.env.TEST_REPORT_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `${this.name.replace(/[^a-z0-9-]+/gi, '_')}.json`);
    fs.writeFileSync(
      file,
      JSON.stringify({
        project: this.name,
        passed: results.numPassedTests,
        failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
        skipped: results.numPendingTests + results.numTodoTests,
        suites: results.numTotalTestSuites,
      }),
    );
  }
}

module.exports = SummaryReporter;
