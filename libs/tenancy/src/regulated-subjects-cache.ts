import type { Logger } from '@pipeline/logger';
import { ControlPlaneUnavailable } from './control-plane-answer';
import type { ControlPlaneClient } from './control-plane-client';
import { RegulatedSubjects } from './regulated-subjects';
import { TenantCache, type TenantCacheOptions } from './tenant-cache';
import type { TenantChangeEvent } from './tenant-change-message';

/**
 * How long a lookup of an account's regulated subjects may take (a ControlPlaneClient's
 * timeout): an account with 100,000 subjects answers about 6.5 MB, which a busy control plane
 * may not send within the 2 s of a write-key lookup. Callers waiting meanwhile share the one
 * lookup; a timeout is ControlPlaneUnavailable.
 */
export const REGULATED_SUBJECTS_TIMEOUT_MS = 10_000;

export interface RegulatedSubjectsCacheOptions {
  /** How long an account's subjects are used before they are asked again. */
  ttlMs: number;
  /**
   * How long past its TTL an account's subjects are still used while the control plane is
   * unavailable (TenantCache's 15 min unless told), and only while changes are heard: a new
   * regulation's broadcast drops them, so an answer past its TTL is never older than the last change.
   */
  staleIfErrorMs?: number;
  /** Accounts kept (10,000 unless told); one with 100,000 subjects holds about 15 MB. */
  maxEntries?: number;
  /**
   * Whether the control plane's tenant changes are being heard. While not, an account's subjects
   * are used at most UNSUBSCRIBED_MAX_TTL_MS (10 s) after they were asked: a regulation takes
   * effect within that bound with or without Redis.
   */
  hearsChanges?: () => boolean;
  onResult?: TenantCacheOptions['onResult'];
}

/** A cached account: `writeKeyId` is empty, so only the account's `tenant_changed` (or a resync) drops it. */
interface CachedRegulations {
  accountId: string;
  writeKeyId: '';
  subjects: RegulatedSubjects;
}

/**
 * Each account's regulated subjects as ingestion and the delivery consumers decide events with
 * them, asked of the control plane (`ControlPlaneClient.regulatedSubjects`) and kept in a
 * TenantCache keyed by account id: one request per account however many callers wait, dropped
 * when the control plane broadcasts the account's `tenant_changed` (which it does after every
 * regulation takes effect or is lifted), and never older than 10 s while that broadcast is not heard.
 */
export class RegulatedSubjectsCache {
  private readonly cache: TenantCache<CachedRegulations>;

  constructor(
    client: Pick<ControlPlaneClient, 'regulatedSubjects'>,
    options: RegulatedSubjectsCacheOptions,
    logger: Logger,
    now: () => number = Date.now,
  ) {
    this.cache = new TenantCache<CachedRegulations>(
      async (accountId) => {
        const record = await client.regulatedSubjects(accountId);
        return { accountId, writeKeyId: '', subjects: new RegulatedSubjects(record) };
      },
      {
        ttlMs: options.ttlMs,
        // The lookup never answers "unknown": an account with none has an empty list.
        unknownTtlMs: options.ttlMs,
        maxEntries: options.maxEntries ?? 10_000,
        name: 'regulated subjects',
        ...(options.staleIfErrorMs !== undefined ? { staleIfErrorMs: options.staleIfErrorMs } : {}),
        ...(options.hearsChanges ? { hearsChanges: options.hearsChanges } : {}),
        ...(options.onResult ? { onResult: options.onResult } : {}),
      },
      logger,
      now,
    );
  }

  /**
   * The account's regulated subjects, from the cache while usable. Throws ControlPlaneUnavailable
   * when they cannot be asked and no cached answer may be used.
   */
  async forAccount(accountId: string): Promise<RegulatedSubjects> {
    const entry = await this.cache.get(accountId, accountId);
    // Stryker disable next-line ConditionalExpression,StringLiteral: the lookup above never answers null
    if (!entry) throw new ControlPlaneUnavailable('the regulated subjects lookup gave no answer');
    return entry.subjects;
  }

  /** The account's subjects when cached and usable, without asking (the door's synchronous path). */
  peek(accountId: string): RegulatedSubjects | undefined {
    return this.cache.peek(accountId)?.subjects;
  }

  /** Control-plane lookups made so far (concurrent ones of one account count once). */
  get lookups(): number {
    return this.cache.lookups;
  }

  /** Drops an account's subjects on its `tenant_changed`, everything on a resync. */
  invalidate(event: TenantChangeEvent): void {
    this.cache.invalidate(event);
  }
}
