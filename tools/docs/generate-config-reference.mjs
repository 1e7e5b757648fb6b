#!/usr/bin/env node
// Writes docs/configuration.md from the services' zod configuration schemas: every variable,
// the processes that read it, its type, its default and its description. The descriptions are
// the schemas' own `.describe()` texts: the schemas are the one source.
//
//   node tools/docs/generate-config-reference.mjs           write docs/configuration.md
//   node tools/docs/generate-config-reference.mjs --check   exit 1 when it is stale
//
// Reads the built schemas (apps/*/dist/config.js): build first (`pnpm docs:generate` does).
// A variable without a description fails both modes: add `.describe('...')` to its schema.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const target = join(repo, 'docs/configuration.md');
const check = process.argv.includes('--check');
const require = createRequire(import.meta.url);

/** The processes, in the order their columns are listed, and the schema each one loads. */
const processes = [
  { name: 'control plane', module: 'apps/control-plane/dist/config.js', schema: 'controlPlaneConfigSchema' },
  {
    name: 'migrations and operator CLI',
    module: 'apps/control-plane/dist/config.js',
    schema: 'migrateConfigSchema',
  },
  { name: 'ingestion', module: 'apps/ingestion/dist/config.js', schema: 'ingestionConfigSchema' },
  { name: 'delivery', module: 'apps/delivery/dist/config.js', schema: 'deliveryConfigSchema' },
  { name: 'dead-letter CLI', module: 'apps/delivery/dist/config.js', schema: 'deadLetterConfigSchema' },
];

function loadSchemas() {
  return processes.map((process_) => {
    const path = join(repo, process_.module);
    if (!existsSync(path)) {
      console.error(
        `${process_.module} is missing: build first (pnpm nx run-many -t build), or run pnpm docs:generate`,
      );
      process.exit(1);
    }
    const schema = require(path)[process_.schema];
    if (!schema?.shape) {
      console.error(`${process_.module} exports no zod object ${process_.schema}`);
      process.exit(1);
    }
    return { ...process_, shape: schema.shape };
  });
}

const def = (schema) => schema._zod.def;

/** Peels defaults and optionals off a field: what is left, its default, whether it may be unset. */
function unwrap(field) {
  let schema = field;
  let defaultValue;
  let optional = false;
  let description = field.description;
  for (;;) {
    const d = def(schema);
    if (d.type === 'default') defaultValue = d.defaultValue;
    else if (d.type === 'optional') optional = true;
    else break;
    schema = d.innerType;
    description ??= schema.description;
  }
  // A default given before a transform sits on the pipe's input: `z.string().default('').transform(...)`.
  if (def(schema).type === 'pipe' && defaultValue === undefined) {
    const input = def(def(schema).in);
    if (input.type === 'default') defaultValue = input.defaultValue;
    if (input.type === 'optional') optional = true;
  }
  return { schema, defaultValue, optional, description };
}

const number = (value) => (Number.isSafeInteger(value) ? value.toLocaleString('en-US') : String(value));

function rangeOf(checks = []) {
  let min;
  let max;
  for (const check of checks.map((c) => c._zod.def)) {
    if (check.check === 'greater_than') min = check.value;
    if (check.check === 'less_than') max = check.value;
  }
  const safe = (v) => v !== undefined && Math.abs(v) < Number.MAX_SAFE_INTEGER;
  if (safe(min) && safe(max)) return ` ${number(min)} to ${number(max)}`;
  if (safe(min)) return ` ≥ ${number(min)}`;
  if (safe(max)) return ` ≤ ${number(max)}`;
  return '';
}

function messageOf(check) {
  try {
    const text = check.error?.({});
    return typeof text === 'string' ? text : (text?.message ?? '');
  } catch {
    return '';
  }
}

/** A reader's name for a field's type, from the zod schema that parses the string. */
function typeOf(schema) {
  const d = def(schema);
  if (d.type === 'pipe') {
    let out = d.out;
    while (def(out).type === 'pipe') out = def(out).out;
    const outType = def(out).type;
    if (outType === 'number') return `integer${rangeOf(def(out).checks)}`;
    if (outType === 'array') return 'comma-separated list';
    if (def(d.in).type === 'enum') {
      const entries = Object.values(def(d.in).entries);
      if (entries.includes('true') && entries.includes('false')) return 'boolean (`true` or `false`)';
    }
    if (def(d.in).type === 'default' || def(d.in).type === 'string') return 'comma-separated list';
    return typeOf(d.in);
  }
  if (d.type === 'enum') {
    return `one of ${Object.values(d.entries)
      .map((v) => `\`${v}\``)
      .join(', ')}`;
  }
  if (d.type === 'string') {
    for (const check of (d.checks ?? []).map((c) => c._zod.def)) {
      const message = messageOf(check);
      const url = message.match(/^expected a URL with scheme (.+)$/);
      if (url)
        return `URL (${url[1]
          .split(' or ')
          .map((s) => `\`${s}:\``)
          .join(' or ')})`;
      const expected = message.match(/^expected an? (.+)$/);
      if (check.format === 'regex' && expected) return expected[1];
      if (check.format === 'regex' && message) return `string (${message.replace(/^must be an? /, '')})`;
      if (check.check === 'min_length' && check.minimum > 1)
        return `string, at least ${check.minimum} characters`;
    }
    return 'string';
  }
  return d.type;
}

function defaultText(value) {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) return `\`${value.join(',')}\``;
  if (value === '') return 'empty';
  if (typeof value === 'number') return number(value);
  return `\`${value}\``;
}

function describeField(field) {
  const { schema, defaultValue, optional, description } = unwrap(field);
  const shown = defaultText(defaultValue);
  return {
    type: typeOf(schema),
    default: shown ?? (optional ? 'unset' : '**required**'),
    description: description?.trim(),
  };
}

/** Values that differ between processes are listed per process; equal ones once. */
function merge(entries, key) {
  const distinct = [...new Set(entries.map((e) => e[key]))];
  if (distinct.length === 1) return distinct[0];
  return entries.map((e) => `**${e.process}:** ${e[key]}`).join('<br>');
}

function render(schemas) {
  const variables = new Map();
  for (const { name, shape } of schemas) {
    for (const [variable, field] of Object.entries(shape)) {
      if (!variables.has(variable)) variables.set(variable, []);
      variables.get(variable).push({ process: name, ...describeField(field) });
    }
  }
  const missing = [...variables].filter(([, entries]) => entries.some((e) => !e.description));
  if (missing.length > 0) {
    const list = missing.map(
      ([variable, entries]) =>
        `  ${variable} (${entries
          .filter((e) => !e.description)
          .map((e) => e.process)
          .join(', ')})`,
    );
    console.error(
      `Variables without a description; add .describe('...') to their zod schemas:\n${list.join('\n')}`,
    );
    process.exit(1);
  }
  const cell = (text) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  const rows = [...variables]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([variable, entries]) => {
      const readBy = entries.map((e) => e.process).join(', ');
      return `| \`${variable}\` | ${cell(readBy)} | ${cell(merge(entries, 'type'))} | ${cell(merge(entries, 'default'))} | ${cell(merge(entries, 'description'))} |`;
    });
  return `<!-- Generated by tools/docs/generate-config-reference.mjs from the services' zod schemas. Do not edit: change the schema's .describe() and run pnpm docs:generate. -->

# Configuration

Every process reads its configuration from environment variables once, at start, and
validates it. A missing or malformed variable stops the process (exit code 78) with a message
naming the variable. An empty value counts as unset. Secret values are never echoed.

The processes: the control plane (\`apps/control-plane/dist/main.js\`), its migrations and
operator CLI (\`dist/database/migrate.js\`, \`dist/cli/main.js\`), ingestion
(\`apps/ingestion/dist/main.js\`), the delivery consumers (\`apps/delivery/dist/main.js
--destination <kind>\`) and their dead-letter CLI (\`dist/dead-letters/main.js\`). How to run
each one: [getting-started.md](getting-started.md#running-each-service).

This page is generated from the zod schemas in \`apps/*/src/config.ts\` and the library
schemas they include; \`pnpm docs:generate\` rewrites it.

| Variable | Read by | Type | Default | Description |
| --- | --- | --- | --- | --- |
${rows.join('\n')}
`;
}

async function formatted(text) {
  const prettier = require(require.resolve('prettier', { paths: [repo] }));
  const options = (await prettier.resolveConfig(target)) ?? {};
  return prettier.format(text, { ...options, filepath: target });
}

const text = await formatted(render(loadSchemas()));
if (check) {
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  if (current !== text) {
    console.error(
      'docs/configuration.md is stale: it differs from what the config schemas generate. Run `pnpm docs:generate` and commit the result.',
    );
    process.exit(1);
  }
  console.log('docs/configuration.md matches the config schemas');
} else {
  writeFileSync(target, text);
  console.log(`wrote docs/configuration.md (${text.split('\n').length} lines)`);
}
