import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import {
  ControlPlaneUnavailable,
  usableCacheEntry,
  type ControlPlaneClient,
  type TenantChangeEvent,
  type TenantRecord,
} from '@pipeline/tenancy';

export interface TenantDirectoryOptions {
  /** How long a looked-up tenant is used before it is asked again (config changes show up). */
  ttlMs: number;
  /** How long past its TTL a cached tenant is still used while the control plane is down. */
  staleIfErrorMs?: number;
  maxEntries?: number;
  /**
   * Whether the control plane's tenant changes are being heard. While not, an entry is used at
   * most UNSUBSCRIBED_MAX_TTL_MS, so rotated credentials replace the old ones within that bound.
   */
  hearsChanges?: () => boolean;
}

/**
 * The delivery consumers' view of tenants: destinations and their credentials come from the
 * control plane by the write key id an outbox record carries (never from the record itself),
 * cached per write key id.
 */
export class TenantDirectory {
  private readonly cache: LRUCache<
    string,
    { tenant: TenantRecord | null; storedAt: number; expiresAt: number }
  >;
  private readonly inFlight = new Map<string, Promise<TenantRecord | null>>();

  constructor(
    private readonly client: Pick<ControlPlaneClient, 'lookup'>,
    private readonly options: TenantDirectoryOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.cache = new LRUCache({ max: options.maxEntries ?? 10_000 });
  }

  /** The tenant, null for an unknown write key id; throws ControlPlaneUnavailable when it cannot be asked. */
  async forWriteKey(writeKeyId: string): Promise<TenantRecord | null> {
    const cached = this.cache.get(writeKeyId);
    if (cached && this.fresh(cached)) return cached.tenant;
    try {
      let pending = this.inFlight.get(writeKeyId);
      if (!pending) {
        pending = this.client.lookup(writeKeyId).finally(() => this.inFlight.delete(writeKeyId));
        this.inFlight.set(writeKeyId, pending);
      }
      const tenant = await pending;
      this.cache.set(writeKeyId, {
        tenant,
        storedAt: this.now(),
        expiresAt: this.now() + this.options.ttlMs,
      });
      return tenant;
    } catch (error) {
      const staleUntil = (cached?.expiresAt ?? 0) + (this.options.staleIfErrorMs ?? 15 * 60_000);
      // Past its TTL an entry is only trusted while a rotation would still be heard.
      const hears = this.options.hearsChanges?.() ?? false;
      if (error instanceof ControlPlaneUnavailable && cached && staleUntil > this.now() && hears) {
        this.logger.warn('control plane unavailable; delivering with a cached tenant past its TTL', {
          error: error.message,
        });
        return cached.tenant;
      }
      throw error;
    }
  }

  /** Drops what a tenant change makes stale: the account's entries, or all after a resync. */
  invalidate(event: TenantChangeEvent): void {
    if (event.kind === 'resync') {
      this.cache.clear();
      return;
    }
    for (const [writeKeyId, entry] of this.cache.entries()) {
      if (entry.tenant?.accountId === event.accountId) this.cache.delete(writeKeyId);
    }
  }

  private fresh(entry: { storedAt: number; expiresAt: number }): boolean {
    return usableCacheEntry(entry, this.now(), this.options.hearsChanges?.() ?? false);
  }
}
