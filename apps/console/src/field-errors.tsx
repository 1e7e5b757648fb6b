// Errors of a form, at their fields: the API's problem `errors[].path` (`body.name`,
// `body.allowedOrigins[0]`, `body.config.host`) mapped to the field that caused it, and what no
// field takes shown above the form.
import type { ComponentChildren } from 'preact';
import { ApiError } from './api';

/** Field name (the path after `body.`, without an index) → its messages. */
export type FieldErrors = Record<string, string[]>;

/**
 * The errors of a failed call by field: `body.allowedOrigins[0]` counts for `allowedOrigins`,
 * `body.config.host` for `config.host`. `byCode` names the field a code without a path (or with
 * a path of a whole object) belongs to, e.g. `warehouse_login_failed` → `credentials.password`.
 */
export function fieldErrorsOf(error: unknown, byCode: Record<string, string> = {}): FieldErrors {
  if (!(error instanceof ApiError)) return {};
  const fields: FieldErrors = {};
  const add = (field: string, message: string) => (fields[field] ??= []).push(message);
  const code = error.problem.code;
  const coded = code ? byCode[code] : undefined;
  if (coded) {
    add(coded, error.message);
    return fields;
  }
  for (const e of error.problem.errors ?? []) {
    if (!e.path) continue;
    const field = e.path.replace(/^body\.?/, '').replace(/\[\d+\]/g, '');
    if (field) add(field, e.message ?? error.message);
  }
  return fields;
}

/** A labelled input with its errors below it, tied by aria-describedby and aria-invalid. */
export function Field({
  id,
  label,
  errors,
  hint,
  children,
}: {
  id: string;
  label: string;
  errors?: string[];
  hint?: ComponentChildren;
  children: (props: {
    id: string;
    'aria-invalid': boolean;
    'aria-describedby'?: string;
  }) => ComponentChildren;
}) {
  const described = [hint ? `${id}-hint` : null, errors?.length ? `${id}-error` : null]
    .filter(Boolean)
    .join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children({ id, 'aria-invalid': Boolean(errors?.length), 'aria-describedby': described || undefined })}
      {hint ? (
        <span id={`${id}-hint`} class="muted hint">
          {hint}
        </span>
      ) : null}
      {errors?.length ? (
        <span id={`${id}-error`} class="field-error" role="alert">
          {errors.join(' ')}
        </span>
      ) : null}
    </div>
  );
}
