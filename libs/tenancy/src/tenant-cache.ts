import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import { ControlPlaneUnavailable } from './control-plane-answer';
import { usableCacheEntry } from './cache-freshness';
import type { TenantChange, TenantChangeEvent } from './tenant-change-message';

/** What a cached tenant must say for change messages to find it. */
export interface CachedTenant {
  accountId: string;
  writeKeyId: string;
}

export interface TenantCacheOptions {
  /** How long a tenant the control plane returned is used before it is asked again. */
  ttlMs: number;
  /** How long an unknown key (the control plane answered none) is remembered. */
  unknownTtlMs: number;
  /**
   * How long past its TTL a tenant is still used while the control plane is unavailable (15 min
   * unless told), and only while changes are heard: a revocation or rotation would still drop it.
   */
  staleIfErrorMs?: number;
  maxEntries?: number;
  /**
   * Whether the control plane's tenant changes are being heard (the subscription is live).
   * While not, a tenant is used at most UNSUBSCRIBED_MAX_TTL_MS after it was looked up.
   */
  hearsChanges?: () => boolean;
  /** Says in its log lines which cache it is. */
  name?: string;
  /**
   * Told how each get() was answered (for a metric): `hit` from the cache, `miss` by asking the
   * control plane (whether it answered or not), `stale` with a tenant past its TTL because it
   * could not be asked.
   */
  onResult?: (result: 'hit' | 'miss' | 'stale') => void;
}

interface Entry<T> {
  tenant: T | null;
  storedAt: number;
  expiresAt: number;
}

/**
 * The one cache of tenants looked up from the control plane, used by ingestion (write key ->
 * tenant, by the key's hash) and by the delivery consumers (write key id -> tenant with
 * credentials). Built on lru-cache's `fetchMethod`:
 *
 * - Concurrent lookups of one key share one control-plane request (lru-cache keeps the fetch
 *   in flight and hands every caller the same promise), also while an entry is refreshed.
 * - Freshness is `usableCacheEntry`: the TTL, and at most UNSUBSCRIBED_MAX_TTL_MS (10 s) while
 *   change messages are not heard. `invalidate` applies the messages: a revoked key's entry, an
 *   account's entries on any other change, everything after a resync. A lookup that an
 *   invalidation cut short (lru-cache aborts it on a resync, and on a change about a key whose
 *   refresh is under way) is asked again, so its caller never sees the abort; an answer to a
 *   lookup under way when a change that concerns it was heard is given to its callers but not
 *   kept.
 * - When the control plane is unavailable (ControlPlaneUnavailable), an entry past its TTL is
 *   served for up to `staleIfErrorMs` more, and only while changes are heard
 *   (`allowStaleOnFetchRejection` for that fetch, `noDeleteOnFetchRejection` so the entry stays
 *   for the next attempt); otherwise the error is thrown.
 *
 * Where the two caches differed before, decided here: an unknown key. Ingestion kept it for its
 * own, shorter TTL, not bounded by the 10 s rule (no change message names an unknown key, so
 * hearing them changes nothing), and never answered from a stale "unknown" when the control
 * plane was down; the delivery consumers' directory kept it like a tenant (its TTL, the 10 s
 * rule) and served a stale "unknown" on errors, which made a consumer drop a tenant's events
 * because the control plane was down. Now both do as ingestion did: an unknown key is
 * remembered for `unknownTtlMs` alone, and past that an error is an error (the caller answers
 * 503 or retries), never "unknown".
 */
export class TenantCache<T extends CachedTenant> {
  private readonly cache: LRUCache<string, Entry<T>, string>;
  private lookupCount = 0;
  /** For each lookup under way, the changes heard since it started: its answer may predate them. */
  private readonly heardDuringLookups = new Set<Set<TenantChange>>();
  /** Replaced on every resync, which aborts the lookups under way: one started under another was cut short. */
  private resyncGeneration: object = {};

  constructor(
    lookup: (key: string, context: string) => Promise<T | null>,
    private readonly options: TenantCacheOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.cache = new LRUCache<string, Entry<T>, string>({
      max: options.maxEntries ?? 10_000,
      noDeleteOnFetchRejection: true,
      fetchMethod: async (key, _stale, { context }) => {
        this.lookupCount += 1;
        const heard = new Set<TenantChange>();
        this.heardDuringLookups.add(heard);
        try {
          const tenant = await lookup(key, context);
          const storedAt = this.now();
          // A change heard while it was asked may not be in the answer: the callers waiting get
          // it, the next lookup asks again.
          const outdated = [...heard].some((change) => affects(change, tenant));
          return {
            tenant,
            storedAt,
            expiresAt: outdated ? storedAt : storedAt + (tenant ? options.ttlMs : options.unknownTtlMs),
          };
        } finally {
          this.heardDuringLookups.delete(heard);
        }
      },
    });
  }

  /** Control-plane lookups under way now (a gauge; each hears the changes until it ends). */
  get lookupsUnderWay(): number {
    return this.heardDuringLookups.size;
  }

  /** Control-plane lookups started so far (concurrent lookups of one key count once). */
  get lookups(): number {
    return this.lookupCount;
  }

  /**
   * The tenant of `key` (null: the control plane knows none), from the cache while usable;
   * `context` is what the lookup needs to ask (the write key, where `key` is its hash).
   * Throws ControlPlaneUnavailable when it cannot be asked and no stale tenant may be used.
   */
  async get(key: string, context: string): Promise<T | null> {
    for (let attempt = 1; ; attempt += 1) {
      const generation = this.resyncGeneration;
      const cached = this.cache.peek(key);
      const now = this.now();
      if (cached && this.usable(cached, now)) {
        this.options.onResult?.('hit');
        return cached.tenant;
      }
      const staleAllowed =
        cached?.tenant != null &&
        now < cached.expiresAt + (this.options.staleIfErrorMs ?? 15 * 60_000) &&
        this.hears();
      const status: LRUCache.Status<string, Entry<T>, string> = {};
      let entry: Entry<T> | undefined;
      let failure: { error: unknown } | undefined;
      try {
        entry = await this.cache.fetch(key, {
          context,
          forceRefresh: true,
          allowStaleOnFetchRejection: staleAllowed,
          status,
        });
      } catch (error) {
        failure = { error };
      }
      // A resync or a change about this key heard while it was asked aborted the lookup (lru-cache
      // then throws, or answers the stale entry where that is allowed): ask again.
      if ((this.resyncGeneration !== generation || status.fetchAborted === true) && attempt < 3) continue;
      if (failure) {
        this.options.onResult?.('miss');
        throw failure.error;
      }
      this.options.onResult?.(status.returnedStale ? 'stale' : 'miss');
      if (status.returnedStale) {
        if (!(status.fetchError instanceof ControlPlaneUnavailable)) throw status.fetchError;
        this.logger.warn('control plane unavailable; using a cached tenant past its TTL', {
          cache: this.options.name ?? 'tenants',
          error: status.fetchError.message,
        });
      }
      // lru-cache's fetch resolves undefined only when the fetchMethod does (this one never does)
      // or when a failure may be answered stale and there is no stale value (stale use is allowed
      // only with a cached tenant): this guards the types, no test can reach it.
      // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable, as said above
      if (!entry) throw new ControlPlaneUnavailable('the tenant lookup gave no answer');
      return entry.tenant;
    }
  }

  /** The cached tenant of `key` while usable (null: known unknown); undefined when it must be asked. */
  peek(key: string): T | null | undefined {
    const cached = this.cache.peek(key);
    return cached && this.usable(cached, this.now()) ? cached.tenant : undefined;
  }

  /**
   * Drops what a tenant change makes stale: a revoked key's entry, every entry of an account
   * whose tenant records changed, and everything after a resync (changes may have been missed).
   */
  invalidate(event: TenantChangeEvent): void {
    if (event.kind === 'resync') {
      this.resyncGeneration = {};
      this.cache.clear();
      return;
    }
    for (const heard of this.heardDuringLookups) heard.add(event);
    // forEach, not entries(): entries() skips a key whose refresh is under way, and lru-cache puts
    // the old entry back when that refresh fails, to be served stale for up to staleIfErrorMs.
    // Deleting the key aborts the refresh; get() then asks again without the revoked entry.
    const affected: string[] = [];
    this.cache.forEach((entry, key) => {
      if (affects(event, entry.tenant)) affected.push(key);
    });
    for (const key of affected) this.cache.delete(key);
  }

  private hears(): boolean {
    return this.options.hearsChanges?.() ?? false;
  }

  private usable(entry: Entry<T>, now: number): boolean {
    // An unknown key needs no change to be heard (none names it): its TTL alone bounds it.
    if (entry.tenant === null) return entry.expiresAt > now;
    return usableCacheEntry(entry, now, this.hears());
  }
}

function affects(change: TenantChange, tenant: CachedTenant | null): boolean {
  if (!tenant || tenant.accountId !== change.accountId) return false;
  return change.kind === 'tenant_changed' || tenant.writeKeyId === change.writeKeyId;
}
