import type { ErrorObject } from 'ajv';
import type { ProblemFieldError } from './problem';

/**
 * ajv's errors as the field errors of a 422, each naming its path under `at` (e.g.
 * `body.params.days`). Messages never include the value: it may be a secret.
 * Of a union (anyOf) only the branch that came closest is reported, so a client reads what to
 * fix rather than every alternative's complaints.
 */
export function schemaFieldErrors(
  errors: readonly ErrorObject[],
  at: string,
  unknownFieldMessage: string,
): ProblemFieldError[] {
  return closestBranches(errors).map((error) => {
    const segments = error.instancePath
      .split('/')
      .slice(1)
      .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    if (error.keyword === 'additionalProperties') segments.push(String(error.params.additionalProperty));
    if (error.keyword === 'required') segments.push(String(error.params.missingProperty));
    const path = segments.reduce((p, s) => (/^\d+$/.test(s) ? `${p}[${s}]` : `${p}.${s}`), at);
    const message =
      error.keyword === 'additionalProperties'
        ? unknownFieldMessage
        : error.keyword === 'required'
          ? 'is required'
          : (error.message ?? 'is not valid');
    return { path, message };
  });
}

function closestBranches(errors: readonly ErrorObject[]): ErrorObject[] {
  const unions = errors.filter((error) => error.keyword === 'anyOf' || error.keyword === 'oneOf');
  if (unions.length === 0) return [...errors];
  const dropped = new Set<ErrorObject>(unions);
  for (const union of unions) {
    const prefix = `${union.schemaPath}/`;
    const byBranch = new Map<string, ErrorObject[]>();
    for (const error of errors) {
      if (!error.schemaPath.startsWith(prefix)) continue;
      const branch = error.schemaPath.slice(prefix.length).split('/')[0] ?? '';
      byBranch.set(branch, [...(byBranch.get(branch) ?? []), error]);
      dropped.add(error);
    }
    const closest = [...byBranch.values()].sort((a, b) => a.length - b.length)[0] ?? [];
    for (const error of closest) dropped.delete(error);
  }
  return errors.filter((error) => !dropped.has(error));
}
