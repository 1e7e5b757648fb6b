import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import {
  ControlPlaneUnavailable,
  isPlausibleWriteKey,
  usableCacheEntry,
  type ControlPlaneClient,
  type TenantChangeEvent,
  type WriteKeyRecord,
} from '@pipeline/tenancy';
import { ingestionErrors } from '../collect/ingestion-errors';
import type { WriteKeyAuthenticator } from './write-key-authenticator';

interface CacheEntry {
  tenant: WriteKeyRecord | null;
  storedAt: number;
  expiresAt: number;
}

export interface HostedAuthenticatorOptions {
  validTtlMs: number;
  invalidTtlMs: number;
  /** How long a known-valid tenant may be used past its TTL while the control plane is down. */
  staleIfErrorMs?: number;
  maxEntries?: number;
  /**
   * Whether revocations are being heard (the tenant-change subscription is live). While not,
   * a valid key is kept at most UNSUBSCRIBED_MAX_TTL_MS, so a revocation takes effect within
   * that bound either way.
   */
  hearsRevocations?: () => boolean;
}

/**
 * Hosted mode: write keys resolve through the control plane, cached by key hash. Valid keys
 * are cached longer than unknown ones; concurrent lookups of one key share one request; a
 * known-valid key keeps working for a while when the control plane is down.
 */
export class HostedAuthenticator implements WriteKeyAuthenticator {
  readonly mode = 'hosted';
  private readonly cache: LRUCache<string, CacheEntry>;
  private readonly inFlight = new Map<string, Promise<WriteKeyRecord | null>>();

  constructor(
    private readonly client: ControlPlaneClient,
    private readonly options: HostedAuthenticatorOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.cache = new LRUCache({ max: options.maxEntries ?? 50_000 });
  }

  isKnownValid(writeKey: string): boolean {
    const entry = this.cache.get(hash(writeKey));
    return entry !== undefined && entry.tenant !== null && this.fresh(entry);
  }

  /**
   * Applies a tenant change from the control plane: a revoked key, or an account whose
   * destinations changed, is looked up again on its next request; a resync drops everything.
   */
  invalidate(event: TenantChangeEvent): void {
    if (event.kind === 'resync') {
      this.cache.clear();
      return;
    }
    for (const [key, entry] of this.cache.entries()) {
      const tenant = entry.tenant;
      if (!tenant || tenant.accountId !== event.accountId) continue;
      if (event.kind === 'tenant_changed' || tenant.writeKeyId === event.writeKeyId) this.cache.delete(key);
    }
  }

  private fresh(entry: CacheEntry): boolean {
    // An unknown key needs no revocation to be heard: its TTL alone bounds it.
    if (entry.tenant === null) return entry.expiresAt > this.now();
    return usableCacheEntry(entry, this.now(), this.options.hearsRevocations?.() ?? false);
  }

  async authenticate(writeKey: string): Promise<WriteKeyRecord> {
    // Too long or odd to be a key: unknown, without a lookup that could only fail.
    if (!isPlausibleWriteKey(writeKey)) throw ingestionErrors.invalidWriteKey();
    const key = hash(writeKey);
    const cached = this.cache.get(key);
    if (cached && this.fresh(cached)) return usable(cached.tenant);
    let tenant: WriteKeyRecord | null;
    try {
      tenant = await this.lookup(key, writeKey);
    } catch (error) {
      if (!(error instanceof ControlPlaneUnavailable)) throw error;
      const staleLimit = (cached?.expiresAt ?? 0) + (this.options.staleIfErrorMs ?? 15 * 60_000);
      // Past its TTL a key is only trusted while a revocation would still be heard.
      const hears = this.options.hearsRevocations?.() ?? false;
      if (cached?.tenant && staleLimit > this.now() && hears) {
        this.logger.warn('control plane unavailable; using a cached tenant past its TTL', {
          error: error.message,
        });
        return cached.tenant;
      }
      this.logger.warn('control plane unavailable; cannot check write key', { error: error.message });
      throw ingestionErrors.authUnavailable(5);
    }
    const valid = tenant !== null && tenant.status === 'active';
    this.cache.set(key, {
      tenant: valid ? tenant : null,
      storedAt: this.now(),
      expiresAt: this.now() + (valid ? this.options.validTtlMs : this.options.invalidTtlMs),
    });
    return usable(valid ? tenant : null);
  }

  private lookup(key: string, writeKey: string): Promise<WriteKeyRecord | null> {
    let pending = this.inFlight.get(key);
    if (!pending) {
      pending = this.client.resolve(writeKey).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, pending);
    }
    return pending;
  }
}

const hash = (writeKey: string) => createHash('sha256').update(writeKey).digest('base64url');

function usable(tenant: WriteKeyRecord | null): WriteKeyRecord {
  if (!tenant) throw ingestionErrors.invalidWriteKey();
  return tenant;
}
