/**
 * The server's content rules (libs/events, event-content.ts and event-time.ts), repeated here
 * because the bundle must not import that module's values; a test keeps the two in step.
 * Strings lose NUL and unpaired surrogates to U+FFFD, nesting stops at `maxDepth` levels, and a
 * timestamp must lie in the years 0001-9999.
 */
export const contentRules = {
  maxDepth: 64,
  minTime: -62_135_596_800_000,
  maxTime: 253_402_300_799_999,
} as const;

// No lookbehind and no `u` flag: the bundle targets ES2018 browsers.
const pairOrBad = /[\uD800-\uDBFF][\uDC00-\uDFFF]|[\0\uD800-\uDFFF]/g;

export const storableText = (text: string): string =>
  text.replace(pairOrBad, (match) => (match.length === 2 ? match : '\uFFFD'));

/**
 * Repairs the strings of a JSON copy in place (keys too) and returns it; throws when it is
 * nested deeper than the server accepts.
 */
export function repairContent<T>(value: T, depth = 0): T {
  if (typeof value === 'string') return storableText(value) as T;
  if (value === null || typeof value !== 'object') return value;
  if (depth > contentRules.maxDepth) {
    throw new RangeError(`it is nested more than ${contentRules.maxDepth} levels deep`);
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i += 1) value[i] = repairContent(value[i], depth + 1);
    return value;
  }
  const object = value as Record<string, unknown>;
  const keys = Object.keys(object);
  const entries = keys.map((key): [string, unknown] => [
    storableText(key),
    repairContent(object[key], depth + 1),
  ]);
  // Rebuilt in the same order as the server's copy; a repaired key equal to another: last wins.
  for (const key of keys) Reflect.deleteProperty(object, key);
  for (const [key, item] of entries)
    Object.defineProperty(object, key, { value: item, enumerable: true, writable: true, configurable: true });
  return value;
}

/** True when `ms` is an instant the server accepts as an event time. */
export const inTimeRange = (ms: number): boolean =>
  Number.isFinite(ms) && ms >= contentRules.minTime && ms <= contentRules.maxTime;
