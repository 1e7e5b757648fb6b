// Every pipeline_* series that deploy/monitoring's alert rules and dashboard read must be one a
// service exports (a prom-client `name: '...'` in apps/*/src or libs/*/src; a histogram's
// _bucket, _count and _sum included), and every runbook_url must name a heading of
// docs/operations.md. Exits 1 naming what is wrong.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const problems = [];

function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    if (name === 'node_modules' || name === 'dist' || name === 'generated') return [];
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return sources(full);
    return name.endsWith('.ts') && !name.endsWith('.test.ts') ? [full] : [];
  });
}

const exported = new Set();
for (const root of ['apps', 'libs'])
  for (const project of readdirSync(path.join(repo, root))) {
    const src = path.join(repo, root, project, 'src');
    try {
      statSync(src);
    } catch {
      continue;
    }
    for (const file of sources(src))
      for (const match of readFileSync(file, 'utf8').matchAll(/name:\s*'(pipeline_[a-z0-9_]+)'/g))
        exported.add(match[1]);
  }

const known = (series) =>
  exported.has(series) ||
  ['_bucket', '_count', '_sum'].some((s) => series.endsWith(s) && exported.has(series.slice(0, -s.length)));

function checkExpr(expr, where) {
  for (const match of expr.matchAll(/\b(pipeline_[a-z0-9_]+)/g))
    if (!known(match[1])) problems.push(`${where}: ${match[1]} is not exported by any service`);
}

const slug = (heading) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s-]/gu, '')
    .replace(/\s/g, '-');
const operations = readFileSync(path.join(repo, 'docs/operations.md'), 'utf8');
const anchors = new Set([...operations.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) => slug(m[1])));

const rules = YAML.parse(readFileSync(path.join(repo, 'deploy/monitoring/alerts.yaml'), 'utf8'));
let alerts = 0;
for (const group of rules.groups)
  for (const rule of group.rules) {
    alerts += 1;
    checkExpr(rule.expr, `alert ${rule.alert}`);
    const url = rule.annotations?.runbook_url ?? '';
    const [file, anchor] = url.split('#');
    if (file !== 'docs/operations.md' || !anchors.has(anchor))
      problems.push(
        `alert ${rule.alert}: runbook_url ${url || '(none)'} is not a section of docs/operations.md`,
      );
  }

const dashboard = JSON.parse(readFileSync(path.join(repo, 'deploy/monitoring/dashboard.json'), 'utf8'));
let targets = 0;
for (const panel of dashboard.panels)
  for (const target of panel.targets ?? []) {
    targets += 1;
    checkExpr(target.expr, `dashboard panel "${panel.title}"`);
  }

if (problems.length > 0) {
  for (const problem of problems) console.error(`monitoring: ${problem}`);
  process.exit(1);
}
console.log(
  `monitoring: ${alerts} alerts and ${targets} dashboard queries read only exported series; every runbook link resolves`,
);
