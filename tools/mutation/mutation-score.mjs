// What the mutation tooling reads from a Stryker report (the mutation-testing-report-schema file
// Stryker keeps for incremental runs): the score, and the break threshold that score calls for.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The module's committed incremental report, relative to the repository root. */
export function incrementalFile(module) {
  return `tools/mutation/incremental/${module}.json`;
}

/** The score of the module's committed report under `root`; undefined before its first run. */
export function recordedScore(root, module) {
  const file = path.join(root, incrementalFile(module));
  return existsSync(file) ? scoreOf(JSON.parse(readFileSync(file, 'utf8'))) : undefined;
}

/**
 * Stryker's mutation score: mutants detected (killed or timed out) out of the valid ones
 * (detected, survived, or not covered by any test). Ignored mutants and those that did not
 * compile or crashed the runner are not valid.
 */
export function scoreOf(report) {
  const counts = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, other: 0 };
  const key = { Killed: 'killed', Timeout: 'timeout', Survived: 'survived', NoCoverage: 'noCoverage' };
  for (const source of Object.values(report.files)) {
    for (const mutant of source.mutants) counts[key[mutant.status] ?? 'other'] += 1;
  }
  const detected = counts.killed + counts.timeout;
  const valid = detected + counts.survived + counts.noCoverage;
  return { ...counts, total: valid, score: valid === 0 ? 100 : (detected / valid) * 100 };
}

/** The lowest break threshold a score allows: two points under it, and never under 85. */
export function requiredBreak(score) {
  return Math.max(85, Math.floor(score - 2));
}
