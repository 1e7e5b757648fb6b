// A form generated from a JSON Schema: the app types' `credentialsSchema` and `configSchema`
// (GET /api/v1/app-types), and any other schema of the same subset. Every input has a <label>;
// an error is tied to its input with aria-describedby and aria-invalid. Secrets (`writeOnly`)
// are password inputs that are never filled from the API: an existing secret shows "set".
//
// The subset (docs/console.md, "Forms"): objects with properties and required, a union of
// objects (anyOf/oneOf: one is chosen), strings (pattern, minLength, maxLength, format), integers
// and numbers (minimum, maximum), booleans, enums (enum, const, anyOf of consts), records
// (patternProperties or additionalProperties with a schema: name → value rows) and arrays of
// those scalars. `unsupported()` names what a schema uses beyond it.

import type { ComponentChildren } from 'preact';
import { errorAt, FieldError, fieldId as idOf, type FieldErrors } from './field-errors';

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

function recordValueSchema(schema: JsonSchema): JsonSchema | null {
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

interface Row {
  key: string;
  value: FormValue;
}
interface UnionValue {
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
        initialValue(field, source[name]),
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
    const out: Record<string, unknown> = {};
    for (const [name, field] of Object.entries(schema.properties ?? {})) {
      const v = collectInto(
        field,
        source[name],
        `${path}.${name}`,
        errors,
        schema.required?.includes(name) ?? false,
      );
      if (v !== undefined) out[name] = v;
    }
    return out;
  }
  if (kind === 'union') {
    const { branch, value } = (state ?? { branch: 0, value: {} }) as UnionValue;
    return collectInto((schema.anyOf ?? schema.oneOf ?? [])[branch] ?? {}, value, path, errors, required);
  }
  if (kind === 'record') {
    const rows = (state ?? []) as Row[];
    const out: Record<string, unknown> = {};
    const valueSchema = recordValueSchema(schema) ?? {};
    rows.forEach((row, i) => {
      const key = row.key.trim();
      if (!key) {
        if (isEntered(row.value)) errors[`${path}.${i}.key`] = 'Enter a name.';
        return;
      }
      if (key in out) errors[`${path}.${i}.key`] = `"${key}" is there twice.`;
      const v = collectInto(valueSchema, row.value, `${path}.${i}.value`, errors, true);
      if (v !== undefined) out[key] = v;
    });
    if (required && Object.keys(out).length === 0 && !errors[path]) errors[path] = 'Add at least one.';
    return Object.keys(out).length > 0 || required ? out : undefined;
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
  if (schema.minLength !== undefined && text.length < schema.minLength)
    errors[path] = `At least ${schema.minLength} characters.`;
  else if (schema.maxLength !== undefined && text.length > schema.maxLength)
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

// --- rendering ----------------------------------------------------------------------------

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

interface FieldProps {
  /** The field's path: `credentials.secretKey`; its input's id and its errors' key come from it. */
  path: string;
  name: string;
  schema: JsonSchema;
  value: FormValue;
  onChange: (value: FormValue) => void;
  errors: FieldErrors;
  required: boolean;
  /** Stored secrets: shown as "set", never filled in; typing replaces them. */
  setSecrets?: readonly string[];
}

export interface SchemaFormProps {
  /** The path of the whole value: `credentials` or `config`. */
  path: string;
  legend: string;
  schema: JsonSchema;
  value: FormValue;
  onChange: (value: FormValue) => void;
  errors: FieldErrors;
  setSecrets?: readonly string[];
  /** Shown under the legend (e.g. how secrets are replaced). */
  hint?: ComponentChildren;
}

/** A fieldset of inputs for `schema`; the value is the form state (`initialValue`, `collect`). */
export function SchemaForm({
  path,
  legend,
  schema,
  value,
  onChange,
  errors,
  setSecrets,
  hint,
}: SchemaFormProps) {
  const error = errorAt(errors, path, true);
  const empty = kindOf(schema) === 'object' && Object.keys(schema.properties ?? {}).length === 0;
  return (
    <fieldset
      class="schema-form"
      id={idOf(path)}
      aria-describedby={error ? `${idOf(path)}-error` : undefined}
    >
      <legend>{legend}</legend>
      {hint ? <p class="muted hint">{hint}</p> : null}
      <FieldError errors={errors} path={path} exact />
      {empty ? (
        <p class="muted">None needed.</p>
      ) : (
        <Inner
          path={path}
          name={path}
          schema={schema}
          value={value}
          onChange={onChange}
          errors={errors}
          required
          {...(setSecrets ? { setSecrets } : {})}
        />
      )}
    </fieldset>
  );
}

/** The fields of an object or the chosen branch of a union, without a fieldset of their own. */
function Inner(props: FieldProps) {
  const { schema, path, value, onChange, errors } = props;
  const kind = kindOf(schema);
  if (kind === 'object') {
    const state = (value ?? {}) as Record<string, FormValue>;
    return (
      <>
        {Object.entries(schema.properties ?? {}).map(([name, field]) => (
          <Field
            key={name}
            path={`${path}.${name}`}
            name={name}
            schema={field}
            value={state[name]}
            onChange={(v) => onChange({ ...state, [name]: v })}
            errors={errors}
            required={schema.required?.includes(name) ?? false}
            {...(props.setSecrets ? { setSecrets: props.setSecrets } : {})}
          />
        ))}
      </>
    );
  }
  if (kind === 'union') return <Union {...props} />;
  return <Field {...props} />;
}

function Union(props: FieldProps) {
  const { schema, path, value, onChange } = props;
  const branches = schema.anyOf ?? schema.oneOf ?? [];
  const state = (value ?? { branch: 0, value: {} }) as UnionValue;
  const branch = branches[state.branch] ?? branches[0] ?? {};
  return (
    <>
      <fieldset class="choice">
        <legend>{schema.description ?? 'One of'}</legend>
        {branches.map((b, i) => (
          <label key={i} class="inline">
            <input
              type="radio"
              name={idOf(path)}
              checked={i === state.branch}
              onChange={() => onChange({ branch: i, value: initialValue(b, {}) })}
            />{' '}
            {b.title ??
              (b.required?.length ? b.required : Object.keys(b.properties ?? {}))
                .map((n) => labelOf(n, {}))
                .join(' and ')}
          </label>
        ))}
      </fieldset>
      <Inner
        {...props}
        schema={branch}
        value={state.value}
        onChange={(v) => onChange({ branch: state.branch, value: v })}
      />
    </>
  );
}

function Field(props: FieldProps) {
  const { path, name, schema, value, onChange, errors, required } = props;
  const id = idOf(path);
  const kind = kindOf(schema);
  const error = errorAt(errors, path, true);
  const label = labelOf(name, schema);
  const isSet = schema.writeOnly && props.setSecrets?.includes(name);
  const described = [schema.description || isSet ? `${id}-help` : '', error ? `${id}-error` : '']
    .filter(Boolean)
    .join(' ');
  const aria = {
    'aria-describedby': described || undefined,
    'aria-invalid': error ? ('true' as const) : ('false' as const),
    'aria-required': required && !isSet ? ('true' as const) : undefined,
  };
  const help =
    schema.description || isSet ? (
      <p class="muted help" id={`${id}-help`}>
        {isSet ? <span class="badge good secret-set">set</span> : null}{' '}
        {isSet ? 'Type a new value to replace it. ' : null}
        {schema.description}
      </p>
    ) : null;
  if (kind === 'object' || kind === 'union')
    return (
      <fieldset class="nested" id={id} aria-describedby={aria['aria-describedby']}>
        <legend>
          {label}
          {required ? null : <span class="muted"> (optional)</span>}
        </legend>
        {help}
        <FieldError errors={errors} path={path} exact />
        <Inner {...props} />
      </fieldset>
    );
  if (kind === 'record' || kind === 'array')
    return <Rows {...props} id={id} label={label} help={help} aria={aria} />;
  const caption = (
    <label for={id}>
      {label}
      {required ? null : <span class="muted"> (optional)</span>}
    </label>
  );
  let input;
  if (kind === 'boolean')
    return (
      <div class="field">
        <label class="inline" for={id}>
          <input
            id={id}
            type="checkbox"
            checked={value === true}
            onChange={(e) => onChange(e.currentTarget.checked)}
            {...aria}
          />{' '}
          {label}
        </label>
        {help}
        <FieldError errors={errors} path={path} exact />
      </div>
    );
  if (kind === 'choice') {
    const choices = choicesOf(schema) ?? [];
    const fallback = schema.default !== undefined ? `default: ${String(schema.default)}` : 'not set';
    input = (
      <select id={id} value={String(value ?? '')} onChange={(e) => onChange(e.currentTarget.value)} {...aria}>
        {required && choices.length === 1 ? null : (
          <option value="">{required ? 'Choose…' : `(${fallback})`}</option>
        )}
        {choices.map((c) => (
          <option key={String(c)} value={String(c)}>
            {String(c)}
          </option>
        ))}
      </select>
    );
  } else {
    const secret = schema.writeOnly === true;
    input = (
      <input
        id={id}
        name={name}
        type={secret ? 'password' : kind === 'string' && schema.format === 'email' ? 'email' : 'text'}
        inputMode={kind === 'number' ? 'numeric' : undefined}
        autoComplete={secret ? 'new-password' : 'off'}
        spellcheck={false}
        placeholder={schema.default !== undefined ? String(schema.default) : isSet ? '••••••••' : undefined}
        value={typeof value === 'string' ? value : ''}
        onInput={(e) => onChange(e.currentTarget.value)}
        {...aria}
      />
    );
  }
  return (
    <div class="field">
      {caption}
      {input}
      {help}
      <FieldError errors={errors} path={path} exact />
    </div>
  );
}

/** A record (name → value rows) or an array (value rows), with Add and Remove buttons. */
function Rows(
  props: FieldProps & {
    id: string;
    label: string;
    help: ComponentChildren;
    aria: Record<string, string | undefined>;
  },
) {
  const { schema, path, value, onChange, errors, id, label, help, required } = props;
  const record = kindOf(schema) === 'record';
  const item = (record ? recordValueSchema(schema) : schema.items) ?? {};
  const rows = (value ?? []) as (Row | FormValue)[];
  const valuePath = (i: number) => (record ? `${path}.${i}.value` : `${path}.${i}`);
  // The API names a record's value by its key (`config.conversionActions.Order Completed`).
  const rowErrors = (i: number, row: Row | FormValue): FieldErrors => {
    const byKey = record ? errors[`${path}.${(row as Row).key.trim()}`] : undefined;
    return byKey && !errors[valuePath(i)] ? { ...errors, [valuePath(i)]: byKey } : errors;
  };
  const set = (i: number, next: Row | FormValue) => onChange(rows.map((r, j) => (j === i ? next : r)));
  return (
    <fieldset class="nested rows" id={id} aria-describedby={props.aria['aria-describedby']}>
      <legend>
        {label}
        {required ? null : <span class="muted"> (optional)</span>}
      </legend>
      {help}
      <FieldError errors={errors} path={path} exact />
      {rows.map((row, i) => (
        <div class="row" key={i}>
          {record ? (
            <Field
              path={`${path}.${i}.key`}
              name={`${label} ${i + 1}: name`}
              schema={{ type: 'string', title: `${label} ${i + 1}: name` }}
              value={(row as Row).key}
              onChange={(k) => set(i, { ...(row as Row), key: String(k) })}
              errors={errors}
              required
            />
          ) : null}
          <Field
            path={valuePath(i)}
            name={`${label} ${i + 1}`}
            schema={{ ...item, title: record ? `${label} ${i + 1}: value` : `${label} ${i + 1}` }}
            value={record ? (row as Row).value : row}
            onChange={(v) => set(i, record ? { ...(row as Row), value: v } : v)}
            errors={rowErrors(i, row)}
            required
          />
          <button type="button" onClick={() => onChange(rows.filter((_, j) => j !== i))}>
            Remove {label.toLowerCase()} {i + 1}
          </button>
        </div>
      ))}
      <button
        type="button"
        onClick={() =>
          onChange([
            ...rows,
            record ? { key: '', value: initialValue(item, undefined) } : initialValue(item, undefined),
          ])
        }
      >
        Add {label.toLowerCase()}
      </button>
    </fieldset>
  );
}
