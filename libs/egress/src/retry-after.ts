/** A Retry-After longer than this is taken as this: a day, the longest any vendor's limit resets in. */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/**
 * The wait a Retry-After header asks for, in ms (RFC 9110 10.2.3): delta-seconds, with a decimal
 * part allowed (Shopify sends "2.0"), or an HTTP date (a date already past is 0). Anything else
 * (absent, blank, negative, "1e3", "0x10", a date that does not parse) is undefined: the caller's
 * own backoff applies. At most `maxMs` (a day unless told).
 *
 * The one parser of the server side: the connectors' HTTP reader and the destinations' vendor
 * requests read Retry-After through it. (The browser SDK keeps its own in
 * libs/sdk/src/retry-policy.ts: it is bundled for the browser and cannot load this library,
 * whose index brings in undici and node:net.)
 */
export function parseRetryAfter(
  value: string | null | undefined,
  options: { now?: number; maxMs?: number } = {},
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const maxMs = options.maxMs ?? MAX_RETRY_AFTER_MS;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.min(maxMs, Math.round(Number(trimmed) * 1000));
  // An HTTP date names its day and month, and has no sign; Date.parse would also take "-5" as
  // a year, and "2026/03/01" (no names) as a date. A blank has no letters either.
  if (!/[a-z]/i.test(trimmed) || /^[-+]/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.min(maxMs, Math.max(0, date - (options.now ?? Date.now())));
}
