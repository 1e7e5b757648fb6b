// A jest reporter that writes each project's counts to $TEST_REPORT_DIR/<project>.json, with the
// file and title of every test that failed or did not run, so tools/test.sh can print one
// closing line for the whole run and name what made it fail.
const fs = require('node:fs');
const path = require('node:path');

const repo = path.resolve(__dirname, '../..');

class SummaryReporter {
  constructor(globalConfig, options) {
    this.name = options.name;
  }

  onRunComplete(_contexts, results) {
    const dir = process.env.TEST_REPORT_DIR;
    if (!dir) return;
    fs.mkdirSync(dir, { recursive: true });
    const failedTests = [];
    const skippedTests = [];
    for (const suite of results.testResults) {
      const file = path.relative(repo, suite.testFilePath);
      // A file that did not load has no test results of its own; its error is the failure.
      if (suite.testExecError) failedTests.push({ file, title: suite.testExecError.message.split('\n')[0] });
      for (const test of suite.testResults) {
        if (test.status === 'failed') failedTests.push({ file, title: test.fullName });
        // pending is it.skip (and what an it.only left out), todo is it.todo; jest has
        // also used skipped and disabled: anything that neither passed nor failed did not run.
        else if (test.status !== 'passed')
          skippedTests.push({ file, title: test.fullName, status: test.status });
      }
    }
    const file = path.join(dir, `${this.name.replace(/[^a-z0-9-]+/gi, '_')}.json`);
    fs.writeFileSync(
      file,
      JSON.stringify({
        project: this.name,
        passed: results.numPassedTests,
        failed: results.numFailedTests + results.numRuntimeErrorTestSuites,
        skipped: results.numPendingTests + results.numTodoTests,
        suites: results.numTotalTestSuites,
        failedTests,
        skippedTests,
      }),
    );
  }
}

module.exports = SummaryReporter;
