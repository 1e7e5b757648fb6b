#!/usr/bin/env node
// Checks the user documentation: README.md, CONTRIBUTING.md, docs/**/*.md, SECURITY.md,
// docker/README.md, deploy/README.md and the READMEs of libs/ and apps/ cite nothing outside the
// repository and link only to what exists. The source (apps/, libs/, tools/, .ci/) is held to the
// same: a comment cites the section of docs/ that states a rule (`docs/tracking-api.md#errors`),
// which must exist, never a document or tracker a reader of the repository cannot open.
//
//   node tools/docs/check-docs.mjs
//
// Fails (exit 1, one line per problem with file:line) on:
// - a path into a sibling checkout (dot-dot, then `shared`) or an absolute path under /work,
// - a reference to an issue or a specification section (the word, then a number),
// - in the source, a `docs/<page>.md` or `docs/<page>.md#<heading>` that does not exist,
// - a relative markdown link to a file or directory that does not exist,
// - a link to a heading (`file.md#some-heading`, `#some-heading`) that the file does not have,
// - a README.md longer than 200 lines.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const files = [
  'README.md',
  'CONTRIBUTING.md',
  'SECURITY.md',
  'docker/README.md',
  'deploy/README.md',
  ...readdirSync(join(repo, 'docs'), { recursive: true })
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  // The libraries' and apps' own READMEs are read by users too.
  ...['libs', 'apps'].flatMap((dir) =>
    readdirSync(join(repo, dir)).map((name) => `${dir}/${name}/README.md`),
  ),
].filter((file) => existsSync(join(repo, file)));

const forbidden = [
  { pattern: /\.\.\/shared\b/, why: 'points into a sibling checkout' },
  { pattern: /(?<![\w.])\/work\//, why: 'names a path outside the repository' },
  { pattern: /\bissues? #?\d+/i, why: 'cites an issue number; say what the rule is instead' },
  {
    pattern: /\bspec(ification)?\s+§?\d/i,
    why: 'cites a specification section; say what the rule is instead',
  },
];

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function slug(heading) {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]+>/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

const anchorCache = new Map();
function anchorsOf(path) {
  if (!anchorCache.has(path)) {
    const seen = new Map();
    const anchors = new Set();
    let fence = false;
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      if (/^\s*```/.test(line)) fence = !fence;
      const heading = !fence && line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
      if (!heading) continue;
      const base = slug(heading[1]);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    anchorCache.set(path, anchors);
  }
  return anchorCache.get(path);
}

const problems = [];
/** Pages and source alike: what points outside the repository. */
function reportForbidden(line, where) {
  for (const { pattern, why } of forbidden) {
    const found = line.match(pattern);
    if (found) problems.push(`${where}: "${found[0]}" ${why}`);
  }
}
for (const file of files) {
  const path = join(repo, file);
  const lines = readFileSync(path, 'utf8').split('\n');
  let fence = false;
  lines.forEach((line, index) => {
    const where = `${file}:${index + 1}`;
    reportForbidden(line, where);
    if (/^\s*```/.test(line)) fence = !fence;
    if (fence) return;
    // Inline links and images: [text](target) and ![alt](target); code spans are not links.
    const text = line.replace(/`[^`]*`/g, '');
    for (const match of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = match[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [filePart, anchor] = target.split('#');
      const resolved = filePart ? resolve(dirname(path), decodeURIComponent(filePart)) : path;
      if (!resolved.startsWith(repo)) {
        problems.push(`${where}: link "${target}" leaves the repository`);
        continue;
      }
      if (!existsSync(resolved)) {
        problems.push(`${where}: link "${target}": ${relative(repo, resolved)} does not exist`);
        continue;
      }
      if (anchor && resolved.endsWith('.md') && statSync(resolved).isFile()) {
        if (!anchorsOf(resolved).has(anchor.toLowerCase())) {
          problems.push(
            `${where}: link "${target}": ${relative(repo, resolved)} has no heading "#${anchor}"`,
          );
        }
      }
    }
  });
}

// The source: comments cite docs/ sections, and what they cite exists.
const sourceExtensions = /\.(ts|tsx|js|mjs|cjs|sh)$/;
const skippedDirectories = new Set([
  'node_modules',
  'dist',
  'coverage',
  '.cache',
  '.nx',
  '.reports',
  '.stryker-tmp',
  'generated',
]);
function sourceFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return skippedDirectories.has(entry.name) ? [] : sourceFiles(full);
    return sourceExtensions.test(entry.name) ? [full] : [];
  });
}
const sources = ['apps', 'libs', 'tools', '.ci'].flatMap((dir) => sourceFiles(join(repo, dir)));
for (const path of sources) {
  const file = relative(repo, path);
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, index) => {
      const where = `${file}:${index + 1}`;
      reportForbidden(line, where);
      for (const match of line.matchAll(/(?<![\w/.-])(docs\/[\w/-]+\.md)(?:#([\w-]+))?/g)) {
        const [cited, page, anchor] = match;
        const target = join(repo, page);
        if (!existsSync(target)) problems.push(`${where}: "${cited}": ${page} does not exist`);
        else if (anchor && !anchorsOf(target).has(anchor.toLowerCase()))
          problems.push(`${where}: "${cited}": ${page} has no heading "#${anchor}"`);
      }
    });
}

// The README stays an introduction; reference material belongs in docs/.
const readmeLines = readFileSync(join(repo, 'README.md'), 'utf8').trimEnd().split('\n').length;
if (readmeLines > 200) {
  problems.push(`README.md: ${readmeLines} lines; keep it to 200 and move reference material to docs/`);
}

if (problems.length > 0) {
  console.error(`Documentation problems (${problems.length}):\n${problems.map((p) => `  ${p}`).join('\n')}`);
  process.exit(1);
}
console.log(
  `docs: ${files.length} pages and ${sources.length} source files checked, no outside references, every relative link resolves`,
);
