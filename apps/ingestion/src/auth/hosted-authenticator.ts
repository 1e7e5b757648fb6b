import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import {
  ControlPlaneUnavailable,
  isPlausibleWriteKey,
  type ControlPlaneClient,
  type WriteKeyRecord,
} from '@pipeline/tenancy';
import { ingestionErrors } from '../collect/ingestion-errors';
import type { WriteKeyAuthenticator } from './write-key-authenticator';

interface CacheEntry {
  tenant: WriteKeyRecord | null;
  expiresAt: number;
}

export interface HostedAuthenticatorOptions {
  validTtlMs: number;
  invalidTtlMs: number;
  /** How long a known-valid tenant may be used past its TTL while the control plane is down. */
  staleIfErrorMs?: number;
  maxEntries?: number;
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
    return entry !== undefined && entry.tenant !== null && entry.expiresAt > this.now();
  }

  async authenticate(writeKey: string): Promise<WriteKeyRecord> {
    // Too long or odd to be a key: unknown, without a lookup that could only fail.
    if (!isPlausibleWriteKey(writeKey)) throw ingestionErrors.invalidWriteKey();
    const key = hash(writeKey);
    const cached = this.cache.get(key);
    if (cached && cached.expiresAt > this.now()) return usable(cached.tenant);
    let tenant: WriteKeyRecord | null;
    try {
      tenant = await this.lookup(key, writeKey);
    } catch (error) {
      if (!(error instanceof ControlPlaneUnavailable)) throw error;
      const staleLimit = (cached?.expiresAt ?? 0) + (this.options.staleIfErrorMs ?? 15 * 60_000);
      if (cached?.tenant && staleLimit > this.now()) {
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
