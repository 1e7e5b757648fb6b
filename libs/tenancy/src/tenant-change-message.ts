/**
 * What the control plane broadcasts when a cached tenant must not be used any longer: a
 * revoked write key (ingestion stops accepting it), or an account whose tenant records changed
 * (rotated credentials, an integration created, edited or deleted, a write key's origins or
 * limits): every cache looks the account's keys up again.
 */
export type TenantChange =
  | { kind: 'write_key_revoked'; accountId: string; writeKeyId: string }
  | { kind: 'tenant_changed'; accountId: string };

/** What a cache does with a change; `resync` follows a gap in which changes may have been missed. */
export type TenantChangeEvent = TenantChange | { kind: 'resync' };

/** Pub/sub channels are not key-prefixed: every instance of every service hears this one. */
export const TENANT_CHANGES_CHANNEL = 'pipeline:tenant-changes:v1';

/**
 * The change a broadcast message carries, or null for anything else on the channel: a message
 * that names no account (or a revocation that names no key) could not be applied to the right
 * entries, so it is not acted on.
 */
export function parseTenantChange(message: string): TenantChange | null {
  try {
    const value = JSON.parse(message) as Partial<TenantChange>;
    if (
      value.kind === 'write_key_revoked' &&
      typeof value.writeKeyId === 'string' &&
      typeof value.accountId === 'string'
    )
      return value as TenantChange;
    if (value.kind === 'tenant_changed' && typeof value.accountId === 'string') return value as TenantChange;
  } catch {
    // Not ours to act on.
  }
  return null;
}
