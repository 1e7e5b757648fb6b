import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import { ControlPlaneUnavailable, type ControlPlaneClient, type TenantRecord } from '@pipeline/tenancy';

export interface TenantDirectoryOptions {
  /** How long a looked-up tenant is used before it is asked again (config changes show up). */
  ttlMs: number;
  /** How long past its TTL a cached tenant is still used while the control plane is down. */
  staleIfErrorMs?: number;
  maxEntries?: number;
}

/**
 * The delivery consumers' view of tenants: destinations and their credentials come from the
 * control plane by the write key id an outbox record carries (never from the record itself),
 * cached per write key id.
 */
export class TenantDirectory {
  private readonly cache: LRUCache<string, { tenant: TenantRecord | null; expiresAt: number }>;
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
    if (cached && cached.expiresAt > this.now()) return cached.tenant;
    try {
      let pending = this.inFlight.get(writeKeyId);
      if (!pending) {
        pending = this.client.lookup(writeKeyId).finally(() => this.inFlight.delete(writeKeyId));
        this.inFlight.set(writeKeyId, pending);
      }
      const tenant = await pending;
      this.cache.set(writeKeyId, { tenant, expiresAt: this.now() + this.options.ttlMs });
      return tenant;
    } catch (error) {
      const staleUntil = (cached?.expiresAt ?? 0) + (this.options.staleIfErrorMs ?? 15 * 60_000);
      if (error instanceof ControlPlaneUnavailable && cached && staleUntil > this.now()) {
        this.logger.warn('control plane unavailable; delivering with a cached tenant past its TTL', {
          error: error.message,
        });
        return cached.tenant;
      }
      throw error;
    }
  }
}
