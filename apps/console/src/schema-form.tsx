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
import {
  choicesOf,
  initialValue,
  kindOf,
  labelOf,
  recordValueSchema,
  type FormValue,
  type JsonSchema,
  type Row,
  type UnionValue,
} from './schema-values';

export {
  choicesOf,
  collect,
  defaultsOf,
  initialValue,
  isEntered,
  kindOf,
  labelOf,
  unsupported,
  type FormValue,
  type JsonSchema,
} from './schema-values';

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
