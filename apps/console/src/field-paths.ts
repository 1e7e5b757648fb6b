// The pure part of the API's errors in a form (field-errors.tsx renders them): the problem's
// `errors[].path` normalized to the form's field path, and the message a field shows.
//
// The API writes a field's path as `body.displayName`, `body.config.tasks[0].stream`,
// `credentials.secretKey` (a connector's check) or `/credentials/api_key` (a JSON pointer); all of
// them name the form's field `displayName`, `config.tasks.0.stream`, `credentials.secretKey`,
// `credentials.api_key`. A field shows its own error and those of the paths below it.
import type { Problem } from './api';

/** Field path (normalized: `config.tasks.0.stream`) → its message ("; " between several). */
export type FieldErrors = Record<string, string>;

/** `body.config.tasks[0].stream`, `/credentials/x` and `credentials.x` → `config.tasks.0.stream`, `credentials.x`. */
export function normalPath(path: string): string {
  return path
    .replace(/\[(\d+)\]/g, '.$1')
    .replace(/\//g, '.')
    .replace(/^\.+/, '')
    .replace(/^body(\.|$)/, '');
}

/** A path as people read it: `config.tasks.0.stream` → `config.tasks[0].stream`. */
export const displayPath = (path: string) => path.replace(/\.(\d+)(?=\.|$)/g, '[$1]');

/** The id of a field's input (or fieldset) for a path; its error's id adds `-error`. */
export const fieldId = (path: string) => `f-${path.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/**
 * The errors of the API's problem document by field. `byCode` names the field a code belongs to
 * when the API gives it no field of its own (or the whole object), e.g.
 * `warehouse_login_failed` → `credentials.password`.
 */
export function fieldErrorsOfProblem(problem: Problem, byCode: Record<string, string> = {}): FieldErrors {
  const coded = problem.code ? byCode[problem.code] : undefined;
  if (coded) return { [coded]: problem.detail ?? problem.title ?? problem.code ?? 'is not valid' };
  // A Map: a field named `__proto__` or `constructor` is a field like any other.
  const fields = new Map<string, string>();
  for (const e of problem.errors ?? []) {
    if (!e.path) continue;
    const path = normalPath(e.path);
    const message = e.message ?? e.code ?? 'is not valid';
    const before = fields.get(path);
    fields.set(path, before ? `${before}; ${message}` : message);
  }
  return Object.fromEntries(fields);
}

export const within = (path: string, field: string) => path === field || path.startsWith(`${field}.`);

/**
 * The message for the field at `path`: its own, and (unless `exact`: fields of their own show
 * them) those of the paths below it, each named by its path.
 */
export function errorAt(errors: FieldErrors, path: string, exact = false): string | undefined {
  const messages = Object.entries(errors)
    .filter(([p]) => (exact ? p === path : within(p, path)))
    .map(([p, m]) => (p === path ? m : `${displayPath(p)}: ${m}`));
  return messages.length > 0 ? messages.join('; ') : undefined;
}
