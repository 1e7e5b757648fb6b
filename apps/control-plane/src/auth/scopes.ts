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
] as const;

export type Scope = (typeof scopes)[number];

export const isScope = (value: string): value is Scope => (scopes as readonly string[]).includes(value);
