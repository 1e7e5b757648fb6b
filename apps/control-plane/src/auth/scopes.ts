import { badRequest } from '../http/api-errors';

/**
 * Scopes of the management API, one per resource and verb. A key carries a set of them; an
 * endpoint names the one it needs in its @Security decorator.
 */
export const scopes = [
  'apps.read',
  'apps.write',
  'sources.read',
  'sources.write',
  'integrations.read',
  'integrations.write',
  'write_keys.read',
  'write_keys.write',
  'usage.read',
  'tasks.read',
  'tasks.write',
  'tasks.manage',
  'dead_letters.read',
  'dead_letters.replay',
  'dead_letters.discard',
  'regulations.read',
  'regulations.write',
  'tracking_plans.read',
  'tracking_plans.write',
  'functions.read',
  'functions.write',
] as const;

export type Scope = (typeof scopes)[number];

export const isScope = (value: string): value is Scope => (scopes as readonly string[]).includes(value);

/**
 * The scopes an issued key carries: each named once, in the order given. 400 `invalid_scopes`
 * for none or for a name that is not a scope (a typo must not issue a key without the scope).
 */
export function checkScopes(requested: readonly string[]): Scope[] {
  const unknown = requested.filter((s) => !isScope(s));
  if (requested.length === 0 || unknown.length > 0) {
    throw badRequest(
      'invalid_scopes',
      `Scopes must be some of: ${scopes.join(', ')}${unknown.length ? `; unknown: ${unknown.join(', ')}` : ''}`,
    );
  }
  return [...new Set(requested as readonly Scope[])];
}
