import { MASK } from './secret-masking';

/** A value of these keys is a URL whatever it looks like; any other string is one when it has a scheme. */
const urlKey = /(url|endpoint)$/i;
const hasScheme = /^[a-z][a-z0-9+.-]*:\/\//i;

/** Every URL-like string in a settings object, with its path in the request. */
function urlsIn(value: unknown, path: string, key = ''): [string, string][] {
  if (typeof value === 'string') return urlKey.test(key) || hasScheme.test(value) ? [[path, value]] : [];
  if (Array.isArray(value)) return value.flatMap((item, index) => urlsIn(item, `${path}[${index}]`));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([name, inner]) => urlsIn(inner, `${path}.${name}`, name));
}

/**
 * The URLs the egress policy must pass before settings are saved, each with its field's path
 * (`body.config.global.url`): every URL-like string of the settings, then each `extra` origin
 * derived from them (a shop's host) unless a URL of the settings has that origin already.
 */
export function urlsToCheck(
  settings: unknown,
  path: string,
  extra: [string, string][] = [],
): [string, string][] {
  const found = urlsIn(settings, path);
  const origins = new Set(found.map(([, url]) => (URL.canParse(url) ? new URL(url).origin : url)));
  return [...found, ...extra.filter(([, url]) => !origins.has(url))];
}

/** Whether a request carries the credentials themselves, not the masks a read answered. */
export const enteredAgain = (credentials: Record<string, unknown> | null | undefined): boolean =>
  credentials !== undefined &&
  credentials !== null &&
  Object.keys(credentials).length > 0 &&
  Object.values(credentials).every((value) => value !== MASK);
