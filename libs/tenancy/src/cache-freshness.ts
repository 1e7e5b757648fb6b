/**
 * Without a live subscription a cache cannot hear of revocations, so it keeps entries at most
 * this long: the documented bound (docs/tracking-api.md, "Revoked write keys") holds with or without Redis.
 */
export const UNSUBSCRIBED_MAX_TTL_MS = 10_000;

/**
 * Whether a cached tenant may still be used at `now`: before its TTL and, while no change would
 * be heard, for at most UNSUBSCRIBED_MAX_TTL_MS after it was stored.
 */
export function usableCacheEntry(
  entry: { storedAt: number; expiresAt: number },
  now: number,
  hearsChanges: boolean,
): boolean {
  if (entry.expiresAt <= now) return false;
  return hearsChanges || now - entry.storedAt < UNSUBSCRIBED_MAX_TTL_MS;
}
