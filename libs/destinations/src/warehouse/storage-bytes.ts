/**
 * The largest storage figure an engine reports for one account: 1 PiB (2^50 bytes). Far past
 * any account this service holds, and small enough that a figure times the storage price stays
 * an exact decimal; a server answering more is not believed.
 */
export const MAX_STORAGE_BYTES = 2 ** 50;

/**
 * A storage figure as a server answered it (a number or its text), made sane: whole bytes in
 * [0, MAX_STORAGE_BYTES]; what is not a number counts as 0. The figure comes from a server the
 * account may own (its own PostgreSQL or ClickHouse, whose superuser can make any function
 * answer anything), so it is bounded here whatever the query did.
 */
export function saneStorageBytes(answered: unknown): number {
  // Number() of a number is that number, of null 0, of undefined and of other text NaN.
  const bytes = Number(answered);
  if (!Number.isFinite(bytes) || bytes <= 0) return 0;
  return Math.min(MAX_STORAGE_BYTES, Math.floor(bytes));
}
