import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import { compilePlan, type CompiledPlan } from '@pipeline/tracking-plans';
import { ControlPlaneUnavailable } from './control-plane-answer';
import { TrackingPlanVersionNotFound, type ControlPlaneClient } from './control-plane-client';

/**
 * A plan version as the door finds it: compiled (`ready`), not a version of the account's plan
 * (`not_found`), or not readable now (`unavailable`: the control plane is down or slow, or
 * answered something that is not a plan).
 */
export type PlanLookup =
  { state: 'ready'; plan: CompiledPlan } | { state: 'not_found' } | { state: 'unavailable' };

export interface TrackingPlanCacheOptions {
  /** Compiled plan versions kept (1,000 unless told). */
  maxEntries?: number;
  /**
   * Bytes of plan documents (JSON, UTF-16 code units) kept, 64 MiB unless told: a plan is at most
   * 1 MiB, and its compiled rules take a few times that once its events have used them.
   */
  maxBytes?: number;
  /** How long a version that could not be read answers `unavailable` before it is asked again (5 s unless told). */
  retryAfterMs?: number;
  /**
   * How long a version the control plane does not have answers `not_found` before it is asked
   * again (60 s unless told): a pinned version may be published later.
   */
  notFoundTtlMs?: number;
  /** Milliseconds of each schema compiled (on its first event: plans are compiled lazily). */
  onCompiled?: (ms: number) => void;
}

const PLAN_UNAVAILABLE: PlanLookup = { state: 'unavailable' };
const PLAN_NOT_FOUND: PlanLookup = { state: 'not_found' };

/**
 * Ingestion's compiled tracking plans, per (account, plan, version), read from the control
 * plane (`ControlPlaneClient.trackingPlanVersion`). A published version never changes, so an
 * entry is never invalidated, only evicted (least recently used, bounded by count and by plan
 * size); a binding moving to a new version is the write key's record changing, which the
 * write-key cache drops on the account's `tenant_changed`. Callers waiting for one version
 * share one request and one compile. A version that cannot be read is `unavailable` for
 * `retryAfterMs`, then asked again by the next caller; callers are never refused or thrown at.
 *
 * Plans are compiled lazily (compilePlan's `lazy`): a rule's schema is compiled on its first
 * event, about 6 ms, instead of the whole plan at once (300 ms for 50 rules), which would hold
 * every tenant's requests on this process.
 */
export class TrackingPlanCache {
  private readonly plans: LRUCache<string, CompiledPlan>;
  private readonly missing: LRUCache<string, true>;
  private readonly failed: LRUCache<string, true>;
  private readonly pending = new Map<string, Promise<PlanLookup>>();
  /** The document size of each cached plan, for the LRU's byte bound. */
  private readonly sizes = new Map<string, number>();
  private lookupsMade = 0;

  constructor(
    private readonly client: Pick<ControlPlaneClient, 'trackingPlanVersion'>,
    private readonly logger: Logger,
    private readonly options: TrackingPlanCacheOptions = {},
  ) {
    this.plans = new LRUCache<string, CompiledPlan>({
      max: options.maxEntries ?? 1_000,
      maxSize: options.maxBytes ?? 64 * 1024 * 1024,
      sizeCalculation: (_plan, key) => this.sizes.get(key) ?? 1,
      dispose: (_plan, key) => this.sizes.delete(key),
    });
    // Bounded apart from the plans: a client pinning versions that do not exist must not evict
    // the plans in use.
    this.missing = new LRUCache<string, true>({ max: 10_000, ttl: options.notFoundTtlMs ?? 60_000 });
    this.failed = new LRUCache<string, true>({ max: 10_000, ttl: options.retryAfterMs ?? 5_000 });
  }

  /** Control-plane requests made so far (concurrent callers of one version count once). */
  get lookups(): number {
    return this.lookupsMade;
  }

  /** Compiled plan versions held. */
  get size(): number {
    return this.plans.size;
  }

  /**
   * What is known of a version without asking: the synchronous path of the door. Undefined when
   * it has to be asked (get).
   */
  peek(accountId: string, planId: string, version: number): PlanLookup | undefined {
    const key = keyOf(accountId, planId, version);
    const plan = this.plans.get(key);
    if (plan) return { state: 'ready', plan };
    if (this.missing.get(key)) return PLAN_NOT_FOUND;
    if (this.failed.get(key)) return PLAN_UNAVAILABLE;
    return undefined;
  }

  /** The version, asked of the control plane when not known; never throws. */
  get(accountId: string, planId: string, version: number): Promise<PlanLookup> {
    const known = this.peek(accountId, planId, version);
    if (known) return Promise.resolve(known);
    const key = keyOf(accountId, planId, version);
    let lookup = this.pending.get(key);
    if (!lookup) {
      lookup = this.read(key, accountId, planId, version).finally(() => this.pending.delete(key));
      this.pending.set(key, lookup);
    }
    return lookup;
  }

  private async read(key: string, accountId: string, planId: string, version: number): Promise<PlanLookup> {
    this.lookupsMade += 1;
    try {
      const record = await this.client.trackingPlanVersion(accountId, planId, version);
      const plan = compilePlan(
        record.plan,
        { planId, version },
        this.options.onCompiled ? { lazy: true, onCompiled: this.options.onCompiled } : { lazy: true },
      );
      this.sizes.set(key, Math.max(1, JSON.stringify(record.plan).length));
      this.plans.set(key, plan);
      return { state: 'ready', plan };
    } catch (error) {
      if (error instanceof TrackingPlanVersionNotFound) {
        this.missing.set(key, true);
        return PLAN_NOT_FOUND;
      }
      // A plan the control plane published but this library will not compile is a deployment
      // fault, logged as one; it is asked again after the back-off like an unreachable one.
      const level = error instanceof ControlPlaneUnavailable ? 'warn' : 'error';
      this.logger[level]('tracking plan version cannot be read; its events are flagged plan_unavailable', {
        accountId,
        planId,
        version,
        error: (error as Error).message,
      });
      this.failed.set(key, true);
      return PLAN_UNAVAILABLE;
    }
  }
}

// Account and plan ids are UUIDs; the separator cannot occur in either.
const keyOf = (accountId: string, planId: string, version: number) =>
  `${accountId}\u0000${planId}\u0000${version}`;
