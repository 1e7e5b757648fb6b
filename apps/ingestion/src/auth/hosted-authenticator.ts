import { hash as digest } from 'node:crypto';
import type { Logger } from '@pipeline/logger';
import {
  ControlPlaneUnavailable,
  isPlausibleWriteKey,
  TenantCache,
  type ControlPlaneClient,
  type TenantCacheOptions,
  type TenantChangeEvent,
  type WriteKeyRecord,
} from '@pipeline/tenancy';
import { ingestionErrors } from '../collect/ingestion-errors';
import type { WriteKeyAuthenticator } from './write-key-authenticator';

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
  /** Told how each check was answered: from the cache, by the control plane, or stale (a metric). */
  onCacheResult?: (result: 'hit' | 'miss' | 'stale') => void;
}

/**
 * Hosted mode: write keys resolve through the control plane, cached by key hash in a
 * TenantCache (@pipeline/tenancy, which the delivery consumers' tenant directory is too).
 * Valid keys are cached longer than unknown ones (a revoked key is unknown); concurrent lookups
 * of one key share one request; a known-valid key keeps working for a while when the control
 * plane is down.
 */
export class HostedAuthenticator implements WriteKeyAuthenticator {
  readonly mode = 'hosted';
  private readonly cache: TenantCache<WriteKeyRecord>;

  constructor(
    client: Pick<ControlPlaneClient, 'resolve'>,
    options: HostedAuthenticatorOptions,
    private readonly logger: Logger,
    now: () => number = Date.now,
  ) {
    this.cache = new TenantCache<WriteKeyRecord>(
      async (_hash, writeKey) => {
        const tenant = await client.resolve(writeKey);
        return tenant !== null && tenant.status === 'active' ? tenant : null;
      },
      writeKeyCacheOptions(options),
      logger,
      now,
    );
  }

  isKnownValid(writeKey: string): boolean {
    return Boolean(this.cache.peek(hash(writeKey)));
  }

  /** Control-plane lookups made so far (concurrent ones of one key count once). */
  get lookups(): number {
    return this.cache.lookups;
  }

  /**
   * Applies a tenant change from the control plane: a revoked key, or an account whose
   * destinations changed, is looked up again on its next request; a resync drops everything.
   */
  invalidate(event: TenantChangeEvent): void {
    this.cache.invalidate(event);
  }

  async authenticate(writeKey: string): Promise<WriteKeyRecord> {
    // Too long or odd to be a key: unknown, without a lookup that could only fail.
    if (!isPlausibleWriteKey(writeKey)) throw ingestionErrors.invalidWriteKey();
    let tenant: WriteKeyRecord | null;
    try {
      tenant = await this.cache.get(hash(writeKey), writeKey);
    } catch (error) {
      if (!(error instanceof ControlPlaneUnavailable)) throw error;
      this.logger.warn('control plane unavailable; cannot check write key', { error: error.message });
      throw ingestionErrors.authUnavailable(5);
    }
    if (!tenant) throw ingestionErrors.invalidWriteKey();
    return tenant;
  }
}

/** The write-key cache's settings: a hosted instance holds up to 50,000 keys unless told. */
export function writeKeyCacheOptions(options: HostedAuthenticatorOptions): TenantCacheOptions {
  return {
    ttlMs: options.validTtlMs,
    unknownTtlMs: options.invalidTtlMs,
    maxEntries: options.maxEntries ?? 50_000,
    name: 'write keys',
    ...(options.staleIfErrorMs !== undefined ? { staleIfErrorMs: options.staleIfErrorMs } : {}),
    ...(options.hearsRevocations ? { hearsChanges: options.hearsRevocations } : {}),
    ...(options.onCacheResult ? { onResult: options.onCacheResult } : {}),
  };
}

// One-shot: a Hash object per call cost more than hashing a key (twice per request).
const hash = (writeKey: string) => digest('sha256', writeKey, 'base64url');
