// The pure part of the JSON-Schema form (schema-form.tsx renders it): what of a schema the form
// renders, the form state for a stored value, the JSON the API takes from a form's state and the
// errors found before sending it, and a field's label.
//
// The subset (docs/console.md, "Forms"): objects with properties and required, a union of
// objects (anyOf/oneOf: one is chosen), strings (pattern, minLength, maxLength, format), integers
// and numbers (minimum, maximum), booleans, enums (enum, const, anyOf of consts), records
// (patternProperties or additionalProperties with a schema: name → value rows) and arrays of
// those scalars. `unsupported()` names what a schema uses beyond it.

import type { FieldErrors } from './field-paths';

export interface JsonSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  patternProperties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  writeOnly?: boolean;
  readOnly?: boolean;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  [keyword: string]: unknown;
}

/** Form state: what the inputs hold (strings, booleans, nested objects, rows of records). */
export type FormValue = unknown;

const KNOWN = new Set([
  'type',
  'title',
  'description',
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'items',
  'anyOf',
  'oneOf',
  'enum',
  'const',
  'default',
  'writeOnly',
  'readOnly',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'minItems',
  'maxItems',
  'examples',
  '$schema',
  '$id',
]);

type Kind = 'object' | 'union' | 'choice' | 'record' | 'array' | 'boolean' | 'number' | 'string';

function typeOf(schema: JsonSchema): string | undefined {
  return Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
}

/** The allowed values of an enum-like schema (enum, const, anyOf of consts), or null. */
export function choicesOf(schema: JsonSchema): unknown[] | null {
  if (Array.isArray(schema.enum)) return schema.enum;
  if ('const' in schema) return [schema.const];
  const union = schema.anyOf ?? schema.oneOf;
  if (union && union.length > 0 && union.every((b) => 'const' in b)) return union.map((b) => b.const);
  return null;
}

export function recordValueSchema(schema: JsonSchema): JsonSchema | null {
  const patterns = Object.values(schema.patternProperties ?? {});
  if (patterns.length === 1 && patterns[0]) return patterns[0];
  if (typeof schema.additionalProperties === 'object') return schema.additionalProperties;
  return null;
}

export function kindOf(schema: JsonSchema): Kind | null {
  if (choicesOf(schema)) return 'choice';
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return union.every((b) => typeOf(b) === 'object' || b.properties) ? 'union' : null;
  const type = typeOf(schema);
  if (type === 'object' || (!type && schema.properties)) {
    if (schema.properties && Object.keys(schema.properties).length > 0) return 'object';
    return recordValueSchema(schema) ? 'record' : 'object';
  }
  if (type === 'array') return schema.items && isScalar(schema.items) ? 'array' : null;
  if (type === 'boolean') return 'boolean';
  if (type === 'integer' || type === 'number') return 'number';
  if (type === 'string') return 'string';
  return null;
}

function isScalar(schema: JsonSchema): boolean {
  const kind = kindOf(schema);
  return kind === 'string' || kind === 'number' || kind === 'boolean' || kind === 'choice';
}

/** What of `schema` this form does not render (empty: all of it), as `path: reason`. */
export function unsupported(schema: JsonSchema, path = ''): string[] {
  const here = path || '(root)';
  const problems = Object.keys(schema)
    .filter((k) => !KNOWN.has(k))
    .map((k) => `${here}: keyword ${k}`);
  const kind = kindOf(schema);
  if (!kind) return [...problems, `${here}: no input for ${JSON.stringify(schema).slice(0, 80)}`];
  if (kind === 'object')
    for (const [name, field] of Object.entries(schema.properties ?? {}))
      problems.push(...unsupported(field, `${path}.${name}`));
  if (kind === 'union')
    (schema.anyOf ?? schema.oneOf ?? []).forEach((branch, i) =>
      problems.push(...unsupported(branch, `${path}|${i}`)),
    );
  if (kind === 'record') {
    const value = recordValueSchema(schema);
    if (value && !isScalar(value)) problems.push(`${here}: a record of ${kindOf(value) ?? 'unknown'}`);
    if (value) problems.push(...unsupported(value, `${path}.*`));
  }
  if (kind === 'array' && schema.items) problems.push(...unsupported(schema.items, `${path}[]`));
  return problems;
}

// --- values -------------------------------------------------------------------------------

// Objects are read and built by their own properties and Maps: a field or a record's name
// `__proto__` or `constructor` is a name like any other, never Object's.
const own = (source: Record<string, unknown>, name: string): unknown =>
  Object.prototype.hasOwnProperty.call(source, name) ? source[name] : undefined;

export interface Row {
  key: string;
  value: FormValue;
}
export interface UnionValue {
  branch: number;
  value: FormValue;
}

/** The form state for `value` (a stored config; secrets are never filled in). */
export function initialValue(schema: JsonSchema, value: unknown): FormValue {
  const kind = kindOf(schema);
  if (kind === 'object') {
    const source = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    return Object.fromEntries(
      Object.entries(schema.properties ?? {}).map(([name, field]) => [
        name,
        initialValue(field, own(source, name)),
      ]),
    );
  }
  if (kind === 'union') {
    const branches = schema.anyOf ?? schema.oneOf ?? [];
    const source = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    const keys = Object.keys(source);
    const found = branches.findIndex((b) => keys.length > 0 && keys.every((k) => k in (b.properties ?? {})));
    const branch = Math.max(0, found);
    return { branch, value: initialValue(branches[branch] ?? {}, source) } satisfies UnionValue;
  }
  if (kind === 'record') {
    const source = (value && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    const value_ = recordValueSchema(schema) ?? {};
    return Object.entries(source).map(([key, v]) => ({
      key,
      value: initialValue(value_, v),
    })) satisfies Row[];
  }
  if (kind === 'array')
    return Array.isArray(value) ? value.map((v) => initialValue(schema.items ?? {}, v)) : [];
  if (schema.writeOnly) return '';
  if (kind === 'boolean') return typeof value === 'boolean' ? value : schema.default === true;
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The schema's defaults as a value (`{ port: 5432, tlsMode: 'verify-full' }`), for a new form. */
export function defaultsOf(schema: JsonSchema): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(schema.properties ?? {})
      .filter(([, field]) => field.default !== undefined && !field.writeOnly)
      .map(([name, field]) => [name, field.default]),
  );
}

/** Whether anything was entered (a secret typed, a field filled). */
export function isEntered(value: FormValue): boolean {
  if (typeof value === 'string') return value.trim() !== '';
  if (typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.length > 0;
  if (value && typeof value === 'object') {
    if ('branch' in value && 'value' in value) return isEntered((value as UnionValue).value);
    return Object.values(value).some(isEntered);
  }
  return false;
}

/**
 * The JSON the API takes from the form state, and the errors found before sending it:
 * required fields, patterns, lengths, numbers and ranges. Empty optional fields are left out.
 */
export function collect(
  schema: JsonSchema,
  state: FormValue,
  path: string,
  errors: FieldErrors = {},
): { value: unknown; errors: FieldErrors } {
  const value = collectInto(schema, state, path, errors, true);
  return { value, errors };
}

function collectInto(
  schema: JsonSchema,
  state: FormValue,
  path: string,
  errors: FieldErrors,
  required: boolean,
): unknown {
  const kind = kindOf(schema);
  if (kind === 'object') {
    const source = (state ?? {}) as Record<string, FormValue>;
    const out = new Map<string, unknown>();
    for (const [name, field] of Object.entries(schema.properties ?? {})) {
      const v = collectInto(
        field,
        own(source, name),
        `${path}.${name}`,
        errors,
        schema.required?.includes(name) ?? false,
      );
      if (v !== undefined) out.set(name, v);
    }
    return Object.fromEntries(out);
  }
  if (kind === 'union') {
    const { branch, value } = (state ?? { branch: 0, value: {} }) as UnionValue;
    return collectInto((schema.anyOf ?? schema.oneOf ?? [])[branch] ?? {}, value, path, errors, required);
  }
  if (kind === 'record') {
    const rows = (state ?? []) as Row[];
    const out = new Map<string, unknown>();
    const valueSchema = recordValueSchema(schema) ?? {};
    rows.forEach((row, i) => {
      const key = row.key.trim();
      if (!key) {
        if (isEntered(row.value)) errors[`${path}.${i}.key`] = 'Enter a name.';
        return;
      }
      if (out.has(key)) errors[`${path}.${i}.key`] = `"${key}" is there twice.`;
      const v = collectInto(valueSchema, row.value, `${path}.${i}.value`, errors, true);
      if (v !== undefined) out.set(key, v);
    });
    if (required && out.size === 0 && !errors[path]) errors[path] = 'Add at least one.';
    return out.size > 0 || required ? Object.fromEntries(out) : undefined;
  }
  if (kind === 'array') {
    const items = ((state ?? []) as FormValue[])
      .map((item, i) => collectInto(schema.items ?? {}, item, `${path}.${i}`, errors, true))
      .filter((v) => v !== undefined);
    if (schema.minItems !== undefined && items.length < schema.minItems)
      errors[path] = `Add at least ${schema.minItems}.`;
    return items.length > 0 || required ? items : undefined;
  }
  if (kind === 'boolean') return state === true ? true : required || state === false ? false : undefined;
  const text = typeof state === 'string' ? state.trim() : '';
  if (text === '') {
    if (required) errors[path] = 'Required.';
    return undefined;
  }
  if (kind === 'choice') {
    const choice = (choicesOf(schema) ?? []).find((c) => String(c) === text);
    if (choice === undefined) errors[path] = 'Choose one of the values.';
    return choice;
  }
  if (kind === 'number') {
    const n = Number(text);
    if (!Number.isFinite(n) || (typeOf(schema) === 'integer' && !Number.isInteger(n))) {
      errors[path] = typeOf(schema) === 'integer' ? 'Enter a whole number.' : 'Enter a number.';
      return undefined;
    }
    if (schema.minimum !== undefined && n < schema.minimum) errors[path] = `At least ${schema.minimum}.`;
    if (schema.maximum !== undefined && n > schema.maximum) errors[path] = `At most ${schema.maximum}.`;
    return n;
  }
  // JSON Schema counts a string's code points (the API's check), not its UTF-16 units: 😀 is one.
  const length = [...text].length;
  if (schema.minLength !== undefined && length < schema.minLength)
    errors[path] = `At least ${schema.minLength} characters.`;
  else if (schema.maxLength !== undefined && length > schema.maxLength)
    errors[path] = `At most ${schema.maxLength} characters.`;
  else if (schema.pattern && !matches(schema.pattern, text)) errors[path] = 'Not in the expected form.';
  return text;
}

function matches(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern, 'u').test(text);
  } catch {
    return true; // a pattern this browser cannot read: the API checks it
  }
}

/** A field's label: its schema's title, else its name spelled out (`apiKey` → "API key"). */
export function labelOf(name: string, schema: JsonSchema): string {
  if (schema.title) return schema.title;
  const words = name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
  const spelled = words.replace(/\b(api|url|id|ip|tls|sdk|rest)\b/g, (w) => w.toUpperCase());
  return spelled.charAt(0).toUpperCase() + spelled.slice(1);
}
