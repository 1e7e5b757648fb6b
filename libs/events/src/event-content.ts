/**
 * What every string and nesting level of an event must be for each later stage to carry it
 * (docs/delivery-and-destinations.md, "What happens to bad data"):
 * - NUL (U+0000) cannot be stored by PostgreSQL in `text` or `jsonb`, and an unpaired UTF-16
 *   surrogate is not Unicode at all (jsonb refuses its `\uD800` escape; UTF-8 encoders turn it
 *   into U+FFFD). Both become U+FFFD, the replacement character, in keys and values alike, so
 *   what the warehouse stores is what every vendor receives.
 * - Nesting deeper than `maxEventDepth` is refused: JSON.stringify overflows the stack at a few
 *   thousand levels and PostgreSQL's jsonb parser at about ten thousand.
 */
export const maxEventDepth = 64;

const REPLACEMENT = '\uFFFD';
// A NUL or any surrogate: only then is the string scanned pair by pair.
const suspicious = /[\0\uD800-\uDFFF]/;
// A well-formed pair is matched first and kept; whatever else matches is NUL or unpaired.
const pairOrBad = /[\uD800-\uDBFF][\uDC00-\uDFFF]|[\0\uD800-\uDFFF]/g;

/** `text` with NUL and unpaired surrogates replaced by U+FFFD; the same string when clean. */
export function storableText(text: string): string {
  return suspicious.test(text)
    ? text.replace(pairOrBad, (match) => (match.length === 2 ? match : REPLACEMENT))
    : text;
}

export type ContentCheck = { ok: true; value: unknown } | { ok: false; path: string };

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** Adds `key` as an own data property, as JSON.parse makes each key (parseJsonText uses it too). */
export function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // A plain assignment to "__proto__" would replace the prototype instead of adding the key.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * True when `node` is within the depth limit and holds no string that needs repair: the common
 * case, checked without allocating (no copies, no paths).
 */
function isClean(node: unknown, depth: number): boolean {
  if (typeof node === 'string') return !suspicious.test(node);
  if (node === null || typeof node !== 'object') return true;
  if (depth > maxEventDepth) return false;
  if (Array.isArray(node)) {
    for (let i = 0; i < node.length; i += 1) if (!isClean(node[i], depth + 1)) return false;
    return true;
  }
  const object = node as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    if (suspicious.test(key) || !isClean(object[key], depth + 1)) return false;
  }
  return true;
}

/**
 * Checks the nesting of a parsed JSON value and repairs its strings. Returns the value itself
 * when nothing needed repair, otherwise a copy (the input is never changed); or the path of
 * the first place nested too deep.
 */
export function checkEventContent(value: unknown): ContentCheck {
  if (isClean(value, 0)) return { ok: true, value };
  let tooDeep: string | undefined;
  const visit = (node: unknown, depth: number, path: string): unknown => {
    if (typeof node === 'string') return storableText(node);
    if (node === null || typeof node !== 'object') return node;
    if (depth > maxEventDepth) {
      tooDeep ??= path;
      return node;
    }
    if (Array.isArray(node)) {
      let copy: unknown[] | undefined;
      for (let i = 0; i < node.length; i += 1) {
        const item: unknown = node[i];
        const next = visit(item, depth + 1, `${path}[${i}]`);
        if (next !== item) copy ??= node.slice();
        if (copy) copy[i] = next;
      }
      return copy ?? node;
    }
    if (!isPlainObject(node)) return node;
    let changed = false;
    const entries: [string, unknown][] = [];
    for (const key of Object.keys(node)) {
      const item = node[key];
      const nextKey = storableText(key);
      const next = visit(item, depth + 1, path ? `${path}.${key}` : key);
      if (nextKey !== key || next !== item) changed = true;
      entries.push([nextKey, next]);
    }
    if (!changed) return node;
    const copy: Record<string, unknown> = {};
    for (const [key, item] of entries) setOwn(copy, key, item);
    return copy;
  };
  const repaired = visit(value, 0, '');
  return tooDeep === undefined ? { ok: true, value: repaired } : { ok: false, path: tooDeep || 'event' };
}
