import { pointerTokens } from './json-pointer';
import type { JsonSchema } from './plan-document';

export type RefProblem =
  | { code: 'property_name_unsupported'; path: string; ref: string }
  | { code: 'ref_not_local'; path: string; ref: string }
  | { code: 'ref_unresolved'; path: string; ref: string }
  | { code: 'ref_cycle'; path: string; ref: string };

/** Keywords whose reference leaves the schema or is resolved only at run time. */
const dynamicRefKeywords = ['$dynamicRef', '$recursiveRef'];

interface RefSite {
  /** Where the `$ref` is, as schema tokens. */
  at: string[];
  ref: string;
  /** The tokens it points at. */
  target: string[];
}

function childEntries(node: unknown): [string, unknown][] {
  if (node === null || typeof node !== 'object') return [];
  return Array.isArray(node) ? node.map((v, i) => [String(i), v]) : Object.entries(node as object);
}

function nodeAt(root: unknown, tokens: readonly string[]): unknown {
  let node = root;
  for (const token of tokens) {
    if (node === null || typeof node !== 'object' || !Object.prototype.hasOwnProperty.call(node, token))
      return undefined;
    node = (node as Record<string, unknown>)[token];
  }
  return node;
}

const isPrefix = (prefix: readonly string[], tokens: readonly string[]) =>
  prefix.length <= tokens.length && prefix.every((t, i) => tokens[i] === t);

const schemaPath = (tokens: readonly string[]) =>
  tokens.map((t) => `/${t.replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');

/**
 * The `$ref`s of one schema: each must point inside the schema itself (`#` or `#/a/b`), at
 * something that exists, and following them must never come back to where it started. A remote
 * reference would make the plan's meaning depend on a server the tenant controls; a cycle would
 * make the diff and example generation walk forever. Walks iteratively: the depth cap is
 * checked before this runs, but a stack is no place to count on that.
 */
export function refProblems(schema: JsonSchema): RefProblem[] {
  const problems: RefProblem[] = [];
  const sites: RefSite[] = [];
  const stack: [unknown, string[]][] = [[schema, []]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [node, at] = item;
    if (node === null || typeof node !== 'object') continue;
    if (!Array.isArray(node)) {
      const record = node as Record<string, unknown>;
      for (const keyword of dynamicRefKeywords)
        if (keyword in record)
          problems.push({
            code: 'ref_not_local',
            path: schemaPath([...at, keyword]),
            ref: String(record[keyword]),
          });
      // ajv skips a property named __proto__ (a guard against prototype pollution): its schema
      // would silently constrain nothing, and additionalProperties: false would refuse it.
      const properties = record.properties;
      if (
        properties !== null &&
        typeof properties === 'object' &&
        Object.prototype.hasOwnProperty.call(properties, '__proto__')
      )
        problems.push({
          code: 'property_name_unsupported',
          path: schemaPath([...at, 'properties', '__proto__']),
          ref: '',
        });
      if (typeof record.$ref === 'string') {
        const ref = record.$ref;
        const tokens = ref.startsWith('#') ? pointerTokens(decodeURIComponentSafe(ref.slice(1))) : undefined;
        if (tokens === undefined)
          problems.push({ code: 'ref_not_local', path: schemaPath([...at, '$ref']), ref });
        else if (nodeAt(schema, tokens) === undefined)
          problems.push({ code: 'ref_unresolved', path: schemaPath([...at, '$ref']), ref });
        else sites.push({ at, ref, target: tokens });
      }
    }
    for (const [key, child] of childEntries(node)) stack.push([child, [...at, key]]);
  }
  // A cycle: from a $ref's target, the refs found inside it lead back to the same $ref.
  const inside = (site: RefSite) => sites.filter((other) => isPrefix(site.target, other.at));
  for (const start of sites) {
    const seen = new Set<RefSite>();
    const queue = inside(start);
    let cyclic = false;
    for (let next = queue.pop(); next !== undefined && !cyclic; next = queue.pop()) {
      if (next === start) cyclic = true;
      else if (!seen.has(next)) {
        seen.add(next);
        queue.push(...inside(next));
      }
    }
    if (cyclic) problems.push({ code: 'ref_cycle', path: schemaPath([...start.at, '$ref']), ref: start.ref });
  }
  return problems;
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** How deep objects and arrays nest in a value, counted without recursion. */
export function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    const [node, depth] = item;
    if (node === null || typeof node !== 'object') continue;
    if (depth > deepest) deepest = depth;
    for (const [, child] of childEntries(node)) stack.push([child, depth + 1]);
  }
  return deepest;
}
