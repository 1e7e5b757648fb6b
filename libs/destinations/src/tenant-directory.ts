import type { Logger } from '@pipeline/logger';
import {
  TenantCache,
  UNSUBSCRIBED_MAX_TTL_MS,
  type ControlPlaneClient,
  type TenantChangeEvent,
  type TenantRecord,
} from '@pipeline/tenancy';

export interface TenantDirectoryOptions {
  /** How long a looked-up tenant is used before it is asked again (config changes show up). */
  ttlMs: number;
  /**
   * How long an unknown write key id is remembered: no change message names one, so only this
   * bounds it. The TTL, at most UNSUBSCRIBED_MAX_TTL_MS, unless told.
   */
  unknownTtlMs?: number;
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
 * cached per write key id in a TenantCache (@pipeline/tenancy, which ingestion's write-key
 * cache is too).
 */
export class TenantDirectory {
  private readonly cache: TenantCache<TenantRecord>;

  constructor(
    client: Pick<ControlPlaneClient, 'lookup'>,
    options: TenantDirectoryOptions,
    logger: Logger,
    now: () => number = Date.now,
  ) {
    this.cache = new TenantCache<TenantRecord>(
      (writeKeyId) => client.lookup(writeKeyId),
      {
        ttlMs: options.ttlMs,
        unknownTtlMs: options.unknownTtlMs ?? Math.min(options.ttlMs, UNSUBSCRIBED_MAX_TTL_MS),
        maxEntries: options.maxEntries ?? 10_000,
        name: 'tenant directory',
        ...(options.staleIfErrorMs !== undefined ? { staleIfErrorMs: options.staleIfErrorMs } : {}),
        ...(options.hearsChanges ? { hearsChanges: options.hearsChanges } : {}),
      },
      logger,
      now,
    );
  }

  /** The tenant, null for an unknown write key id; throws ControlPlaneUnavailable when it cannot be asked. */
  forWriteKey(writeKeyId: string): Promise<TenantRecord | null> {
    return this.cache.get(writeKeyId, writeKeyId);
  }

  /** Control-plane lookups made so far (concurrent ones of one id count once). */
  get lookups(): number {
    return this.cache.lookups;
  }

  /** Drops what a tenant change makes stale: a revoked key's entry, the account's entries, or all after a resync. */
  invalidate(event: TenantChangeEvent): void {
    this.cache.invalidate(event);
  }
}
