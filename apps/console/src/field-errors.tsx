// The API's errors in a form, for every page and the JSON-Schema form: the problem's
// `errors[].path` mapped to the field that caused it (one path normalization), one component for
// a field's error, one labelled field around an input, and one for the form's error above it.
//
// The API writes a field's path as `body.displayName`, `body.config.tasks[0].stream`,
// `credentials.secretKey` (a connector's check) or `/credentials/api_key` (a JSON pointer); all of
// them name the form's field `displayName`, `config.tasks.0.stream`, `credentials.secretKey`,
// `credentials.api_key`. A field shows its own error and those of the paths below it.
import type { ComponentChildren } from 'preact';
import { ApiError } from './api';
import {
  displayPath,
  errorAt,
  fieldErrorsOfProblem,
  fieldId,
  normalPath,
  within,
  type FieldErrors,
} from './field-paths';
import { ErrorNotice } from './ui';

export { displayPath, errorAt, fieldId, normalPath, type FieldErrors };

/**
 * The errors of a failed call (an ApiError or its problem) by field. `byCode` names the field a
 * code belongs to when the API gives it no field of its own (or the whole object), e.g.
 * `warehouse_login_failed` → `credentials.password`.
 */
export function fieldErrorsOf(error: unknown, byCode: Record<string, string> = {}): FieldErrors {
  return error instanceof ApiError ? fieldErrorsOfProblem(error.problem, byCode) : {};
}

/** The error of one field, shown under it; its id ties it to the input (aria-describedby). */
export function FieldError({
  errors,
  path,
  id,
  exact = false,
}: {
  errors: FieldErrors;
  path: string;
  id?: string;
  exact?: boolean;
}) {
  const message = errorAt(errors, path, exact);
  if (!message) return null;
  return (
    <span class="field-error" id={id ?? `${fieldId(path)}-error`}>
      {message}
    </span>
  );
}

/** A labelled input with its hint and error below it, tied by aria-describedby and aria-invalid. */
export function Field({
  path,
  label,
  errors,
  hint,
  children,
}: {
  path: string;
  label: ComponentChildren;
  errors: FieldErrors;
  hint?: ComponentChildren;
  children: (props: {
    id: string;
    'aria-invalid': boolean;
    'aria-describedby'?: string;
  }) => ComponentChildren;
}) {
  const id = fieldId(path);
  const error = errorAt(errors, path);
  const described = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(' ');
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children({ id, 'aria-invalid': Boolean(error), 'aria-describedby': described || undefined })}
      {hint ? (
        <span id={`${id}-hint`} class="muted hint">
          {hint}
        </span>
      ) : null}
      <FieldError errors={errors} path={path} />
    </div>
  );
}

/** Moves the focus to the field at `path` (the first input of a fieldset); false if none. */
export function focusField(path: string): boolean {
  const el = document.getElementById(fieldId(path));
  const target =
    el instanceof HTMLFieldSetElement ? el.querySelector<HTMLElement>('input, select, textarea, button') : el;
  target?.focus();
  return Boolean(target);
}

/** Focuses the first field that has an error. */
export function focusFirstError(errors: FieldErrors): void {
  Object.keys(errors).some(focusField);
}

/**
 * The form's error above or below its fields: the API's problem (or a check's message), and its
 * field errors listed again, each a link to its field when the form has one (`shown`: the paths
 * the form shows at fields; without it, any field found on the page).
 */
export function FormError({
  error,
  errors = fieldErrorsOf(error),
  shown,
}: {
  error: unknown;
  errors?: FieldErrors;
  shown?: string[];
}) {
  if (!error) return null;
  const entries = Object.entries(errors);
  const list =
    entries.length > 0 ? (
      <ul class="error-list">
        {entries.map(([path, message]) => {
          const field = shown ? shown.map(normalPath).find((s) => within(path, s)) : path;
          return (
            <li key={path}>
              {field ? (
                <a
                  href={location.hash || '#/'}
                  onClick={(e) => {
                    e.preventDefault();
                    if (!focusField(path)) focusField(field);
                  }}
                >
                  {displayPath(path)}
                </a>
              ) : (
                <code>{displayPath(path)}</code>
              )}
              : {message}
            </li>
          );
        })}
      </ul>
    ) : null;
  if (error instanceof ApiError && error.forbidden) return <ErrorNotice error={error} />;
  return (
    <div class="notice error" role="alert">
      <p>
        {error instanceof ApiError && error.problem.status === 404 ? 'Not found: ' : null}
        {error instanceof Error ? error.message : String(error)}
        {error instanceof ApiError && error.problem.code ? <> ({error.problem.code})</> : null}
      </p>
      {list}
    </div>
  );
}

/** Runs an action with a busy flag, keeping its error for the form. */
export async function attempt(
  setBusy: (busy: boolean) => void,
  setError: (error: unknown) => void,
  work: () => Promise<void>,
): Promise<void> {
  setBusy(true);
  setError(null);
  try {
    await work();
  } catch (e) {
    setError(e);
  } finally {
    setBusy(false);
  }
}
