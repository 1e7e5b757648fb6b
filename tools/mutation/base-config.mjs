import { readFileSync } from 'node:fs';
import { incrementalFile } from './mutation-score.mjs';

// Shared StrykerJS settings; each module's stryker.config.mjs names what it mutates, which unit
// tests kill the mutants, and its break threshold. Stryker runs from the repository root (see
// tools/mutation/run.mjs) so the sandbox holds the root jest preset and the workspace libraries
// that moduleNameMapper points at.

/**
 * @param {object} module
 * @param {string} module.dir the module's folder, e.g. 'libs/events'
 * @param {string[]} module.mutate files (or ranges) to mutate, relative to the repository root
 * @param {string[]} module.tests unit test globs, relative to the module's folder; pure tests
 *   only: a mutant run repeats them hundreds of times
 * @param {number} module.breakAt the score under which the run fails
 * @returns {import('@stryker-mutator/api/core').PartialStrykerOptions}
 */
export function mutationConfig({ dir, mutate, tests, breakAt }) {
  const name = dir.split('/').pop();
  return {
    testRunner: 'jest',
    testRunner_comment: 'jest 30 with per-project configs built from jest.preset.js',
    plugins: ['@stryker-mutator/jest-runner'],
    jest: {
      projectType: 'custom',
      configFile: `${dir}/jest.config.js`,
      // The preset's summary reporter writes into .reports; a mutant run needs no report.
      config: { testMatch: tests.map((t) => `<rootDir>/${t}`), reporters: ['default'] },
      enableFindRelatedTests: false,
    },
    mutate,
    coverageAnalysis: 'perTest',
    concurrency: 2,
    inPlace: false,
    // Copy only what the tests load: the root preset, package manifests and sources of the
    // module and of the libraries it imports (node_modules folders are symlinked by Stryker).
    ignorePatterns: [
      '/*',
      '!/jest.preset.js',
      '!/package.json',
      '!/libs',
      '!/apps',
      // Tests that check code against the docs (e.g. Segment's destination names) read them.
      '!/docs',
      'dist',
      '.reports',
      'coverage',
    ],
    tempDirName: `.stryker-tmp/${name}`,
    thresholds: { high: Math.min(100, breakAt + 5), low: breakAt, break: breakAt },
    reporters: ['clear-text', 'progress', 'html', 'json'],
    htmlReporter: { fileName: `.reports/mutation/${name}/index.html` },
    jsonReporter: { fileName: `.reports/mutation/${name}/mutation.json` },
    incremental: true,
    incrementalFile: incrementalFile(name),
    timeoutMS: 10000,
  };
}

/**
 * `mutate` ranges (`file:start-end`) of the named top-level functions, classes and constants (arrow
 * functions, lookup tables; with or without a type annotation) of a source file, found by name at
 * load time so a config never holds line numbers that drift. A function ends at its first line
 * that is a lone `}`; a constant at its first line followed by a blank line.
 * @param {string} file relative to the repository root
 * @param {string[]} names
 */
export function functionRanges(file, names) {
  const lines = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8').split('\n');
  return names.map((name) => {
    const start = lines.findIndex((line) =>
      new RegExp(`^(export )?(function ${name}\\b|class ${name}\\b|const ${name}(: [^=]+)? = )`).test(line),
    );
    if (start < 0) throw new Error(`${file}: no top-level function, class or constant named ${name}`);
    const isBlock = !lines[start].includes('const ');
    let end = start;
    while (end < lines.length - 1 && (isBlock ? lines[end] !== '}' : lines[end + 1] !== '')) end += 1;
    return `${file}:${start + 1}-${end + 1}`;
  });
}
