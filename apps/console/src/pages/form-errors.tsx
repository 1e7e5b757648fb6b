import { ApiError } from '../api';
import { ErrorNotice } from '../ui';

/** The API's field errors (`errors[].path`, e.g. `body.importTasks`) by path. */
export function fieldErrorsOf(error: unknown): Map<string, string> {
  const fields = new Map<string, string>();
  if (!(error instanceof ApiError)) return fields;
  for (const e of error.problem.errors ?? []) {
    if (!e.path) continue;
    const before = fields.get(e.path);
    const message = e.message ?? e.code ?? 'invalid';
    fields.set(e.path, before ? `${before}; ${message}` : message);
  }
  return fields;
}

/** The message for one field (its path, or any path below it), shown under the field. */
export function FieldError({
  errors,
  path,
  id,
  exact = false,
}: {
  errors: Map<string, string>;
  path: string;
  id?: string;
  /** Only `path` itself, not the paths below it (which fields of their own show). */
  exact?: boolean;
}) {
  const messages = [...errors].filter(
    ([p]) => p === path || (!exact && (p.startsWith(`${path}.`) || p.startsWith(`${path}[`))),
  );
  if (messages.length === 0) return null;
  return (
    <span class="field-error" id={id} role="alert">
      {messages.map(([p, m]) => (p === path ? m : `${p.replace(/^body\./, '')}: ${m}`)).join('; ')}
    </span>
  );
}

/**
 * The form's error: the API's problem, its field errors listed again when no field shows them
 * (`shown` holds the paths the form has fields for).
 */
export function FormError({ error, shown }: { error: unknown; shown: string[] }) {
  if (!error) return null;
  const unplaced = [...fieldErrorsOf(error)].filter(
    ([p]) => !shown.some((s) => p === s || p.startsWith(`${s}.`) || p.startsWith(`${s}[`)),
  );
  return (
    <>
      <ErrorNotice error={error} />
      {unplaced.length > 0 ? (
        <ul class="error-list">
          {unplaced.map(([p, m]) => (
            <li key={p}>
              <code>{p}</code>: {m}
            </li>
          ))}
        </ul>
      ) : null}
    </>
  );
}

/** Runs an action with a busy flag and its error kept for the form. */
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
