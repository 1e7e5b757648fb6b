// The rule tools/mutation/check-configs.mjs applies to each change of a module's mutation config:
// a lower break threshold, or a mutate list that no longer covers something it covered, needs a
// line in docs/testing.md that says why (docs/testing.md#lowered-thresholds-and-narrowed-scopes).
// Pure functions over what the checker read, so that node:test can hold them to the rule.
import path from 'node:path';

export const REASONS_HEADING = '## Lowered thresholds and narrowed scopes';

/** A `file:start-end` mutate entry (what `functionRanges` writes) as its parts; else undefined. */
export function mutateRange(entry) {
  const range = /^(.+):(\d+)-(\d+)$/.exec(entry);
  return range ? { file: range[1], start: Number(range[2]), end: Number(range[3]) } : undefined;
}

/** Whether a mutate pattern (a path or a glob, without its `!`) names the file. */
export const patternMatches = (pattern, file) => pattern === file || path.matchesGlob(file, pattern);

/**
 * A mutate entry as a unit that survives edits around it: a `file:start-end` range becomes
 * `file#name` after the top-level function, class or constant its first line declares (ranges are
 * what `functionRanges` writes, and their line numbers move with every edit above them).
 * @param {string} entry
 * @param {(file: string) => string | undefined} readSource the file's text in the same tree
 */
export function scopeUnit(entry, readSource) {
  const range = mutateRange(entry);
  if (!range) return entry;
  const { file, start } = range;
  const line = readSource(file)?.split('\n')[start - 1] ?? '';
  const declared = /^(?:export )?(?:async )?(?:function\*? |class |const )([A-Za-z_$][\w$]*)/.exec(line);
  return declared ? `${file}#${declared[1]}` : entry;
}

function covers(units, file) {
  const matches = (pattern) => patternMatches(pattern, file);
  const positive = units.filter((u) => !u.startsWith('!'));
  const negative = units.filter((u) => u.startsWith('!')).map((u) => u.slice(1));
  return positive.some(matches) && !negative.some(matches);
}

/**
 * What a change of one module's config took away.
 * @param {{ breakAt: number, units: string[] } | undefined} before
 * @param {{ breakAt: number, units: string[] } | undefined} after undefined: the config was deleted
 * @returns {string[]} one sentence per loss; empty when nothing was lowered or narrowed
 */
export function scopeLosses(before, after) {
  if (!before) return [];
  if (!after) return ['its stryker.config.mjs was deleted'];
  const losses = [];
  if (after.breakAt < before.breakAt) losses.push(`break lowered from ${before.breakAt} to ${after.breakAt}`);
  for (const unit of before.units) {
    if (unit.startsWith('!') || after.units.includes(unit)) continue;
    const [file] = unit.split('#');
    // A whole file (or a glob naming it) still covers a function of it that was listed alone.
    if (unit.includes('#') && covers(after.units, file)) continue;
    losses.push(`no longer mutates ${unit}`);
  }
  for (const unit of after.units) {
    if (unit.startsWith('!') && !before.units.includes(unit)) losses.push(`now leaves out ${unit.slice(1)}`);
  }
  return losses;
}

/** The `- \`module\` ...` lines of docs/testing.md's reasons section. */
export function reasonLines(markdown) {
  const lines = markdown.split('\n');
  const start = lines.indexOf(REASONS_HEADING);
  if (start < 0) return [];
  const end = lines.findIndex((line, i) => i > start && line.startsWith('## '));
  return lines
    .slice(start + 1, end < 0 ? undefined : end)
    .filter((line) => /^- `[a-z0-9-]+`.*\S.*:\s*\S/.test(line));
}

/** Modules named by a reason line the change added (one that was not there before it). */
export function modulesGivenReasons(docsBefore, docsAfter) {
  const before = new Set(reasonLines(docsBefore ?? ''));
  return new Set(
    reasonLines(docsAfter ?? '')
      .filter((line) => !before.has(line))
      .map((line) => /^- `([a-z0-9-]+)`/.exec(line)[1]),
  );
}
