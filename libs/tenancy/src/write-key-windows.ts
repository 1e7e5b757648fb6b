// The shared counters of a write key's event limits, as ingestion counts them in Redis and as
// the control plane adds replayed dead letters to them: one definition, so both count in the
// same keys.

/** Ingestion's Redis key prefix: its counters are `ingestion:rl:…` in the shared store. */
export const INGESTION_KEY_PREFIX = 'ingestion:';

/** Seconds a write key's second counter lives (its window, and one more for clock skew). */
export const SECOND_WINDOW_TTL_SECONDS = 2;
/** Seconds a write key's day counter lives: its UTC day, and an hour more. */
export const DAY_WINDOW_TTL_SECONDS = 90_000;

/**
 * The hash tag of a write key's keys in the shared store: a Redis Cluster hashes only what is
 * inside the braces, so the windows and the batch dedupe key of one request share one slot and
 * one script may touch them all. Different write keys spread over the cluster's nodes.
 */
export function writeKeyHashTag(writeKeyId: string): string {
  return `{${writeKeyId}}`;
}

/**
 * The shared counters of a write key at `nowMs` (without INGESTION_KEY_PREFIX): its second and
 * its UTC day. The write key id is in both, so no key counts against another's budget; as the
 * hash tag, so both share a slot.
 */
export function writeKeyWindowKeys(writeKeyId: string, nowMs: number): [second: string, day: string] {
  const second = Math.floor(nowMs / 1000);
  const day = new Date(nowMs).toISOString().slice(0, 10);
  const tag = writeKeyHashTag(writeKeyId);
  return [`rl:s:${tag}:${second}`, `rl:d:${tag}:${day}`];
}
