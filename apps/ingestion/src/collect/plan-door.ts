import {
  MAX_VIOLATIONS_PER_EVENT,
  type EnvelopePlan,
  type PlanVerdict,
  type TrackingEvent,
} from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import { debugPayload, type ViolationEntry, type ViolationLedger } from '@pipeline/redis';
import type { PlanLookup, TrackingPlanCache, TrackingPlanBinding } from '@pipeline/tenancy';
import { ruleVersionPin, type CompiledPlan, type Violation } from '@pipeline/tracking-plans';

/** What the door counts (IngestionMetrics). */
export interface PlanDoorMetrics {
  /** Violations of committed events, by code. */
  planViolations(code: string, count: number): void;
  /** Events whose plan could not be read: flagged plan_unavailable (verdict version null). */
  planUnavailable(count: number): void;
}

/** How often at most the door logs, per plan version, that it could not validate. */
export const PLAN_FAILURE_LOG_INTERVAL_MS = 60_000;
const MAX_LOGGED = 10_000;

/**
 * Plan versions other than the bound one that one request's events may have looked up: a
 * client pins one, maybe two. The events of a request that pins more are flagged
 * plan_unavailable beyond these, never held to a version they did not ask for.
 */
export const MAX_PINNED_LOOKUPS = 4;
const NOT_FOUND: PlanLookup = { state: 'not_found' };
const UNREAD: PlanLookup = { state: 'unavailable' };

/** A sample's payload is cut above this many bytes of JSON: samples are many, and only looked at. */
export const SAMPLE_PAYLOAD_MAX_BYTES = 4096;

/** The code an event whose plan could not be read is counted under (its verdict's version is null). */
export const PLAN_UNAVAILABLE = 'plan_unavailable';

/** An event's verdict when its plan cannot be read: accepted, flagged, never dropped. */
const UNAVAILABLE: PlanVerdict = Object.freeze({ version: null, violations: [] }) as PlanVerdict;

/** What the violations of an event are counted under: track's event, page's and screen's name. */
function nameOf(event: TrackingEvent): string | null {
  const name = event.type === 'track' ? event.event : (event as { name?: unknown }).name;
  return typeof name === 'string' ? name : null;
}

/**
 * The plan version an event pins the way RudderTyper's generated clients do
 * (`context.ruddertyper.trackingPlanId` and `trackingPlanVersion`), honoured only when the id is
 * the bound plan's (as rudder-server does); undefined when it pins none.
 */
export function rudderTyperPin(event: TrackingEvent, planId: string): number | undefined {
  const context = event.context as { ruddertyper?: unknown } | undefined;
  const pin = context?.ruddertyper as { trackingPlanId?: unknown; trackingPlanVersion?: unknown } | undefined;
  if (typeof pin !== 'object' || pin === null || pin.trackingPlanId !== planId) return undefined;
  const version = pin.trackingPlanVersion;
  return Number.isSafeInteger(version) && (version as number) >= 1 ? (version as number) : undefined;
}

/** A verdict's violations, listed up to MAX_VIOLATIONS_PER_EVENT. */
function verdictOf(version: number, violations: Violation[]): PlanVerdict {
  return violations.length <= MAX_VIOLATIONS_PER_EVENT
    ? { version, violations }
    : {
        version,
        violations: violations.slice(0, MAX_VIOLATIONS_PER_EVENT),
        unlisted: violations.length - MAX_VIOLATIONS_PER_EVENT,
      };
}

/** What the door decided for a request's events (undefined: the key binds no plan). */
export interface PlanVerdicts {
  plan: EnvelopePlan;
  /** One per event, aligned with the events given. */
  verdicts: PlanVerdict[];
}

/**
 * The tracking-plan door of hosted ingestion (docs/tracking-plans.md, "Validation at the door"):
 * each event of a write key that binds a plan gets a verdict, the plan version it was held to and
 * its violations, which travels with it in the outbox envelope. The door never refuses and never
 * drops: the answer is what it would have been without a plan, and an event whose plan cannot
 * be read is accepted with version null (`plan_unavailable`). Plans come from a
 * TrackingPlanCache; a request whose plan is cached is validated without awaiting anything.
 */
export class PlanDoor {
  private readonly loggedAt = new Map<string, number>();

  constructor(
    private readonly plans: Pick<TrackingPlanCache, 'peek' | 'get'>,
    private readonly metrics: PlanDoorMetrics,
    private readonly logger: Logger,
    /** Where violations are counted over time for the API and alerts; unset: metrics only. */
    private readonly ledger?: Pick<ViolationLedger, 'record'>,
    private readonly now: () => number = Date.now,
  ) {}

  /** The verdicts of `events` under the binding of the account's write key. */
  async verdicts(
    accountId: string,
    binding: TrackingPlanBinding,
    events: readonly TrackingEvent[],
  ): Promise<PlanVerdicts> {
    const { planId, version } = binding;
    const bound =
      this.plans.peek(accountId, planId, version) ?? (await this.plans.get(accountId, planId, version));
    // The plan versions events pin, other than the bound one, each looked up once.
    const pins = events.map((event) => {
      const pin = rudderTyperPin(event, planId);
      return pin === version ? undefined : pin;
    });
    const pinned = new Map<number, PlanLookup>();
    const asked: number[] = [];
    for (const pin of pins) {
      if (pin === undefined || pinned.has(pin)) continue;
      // A `latest` binding is the newest version there is: a pin above it names none, and is
      // not asked of the control plane (a client could otherwise have it asked once a request).
      const known =
        binding.binding === 'latest' && pin > version ? NOT_FOUND : this.plans.peek(accountId, planId, pin);
      if (known) pinned.set(pin, known);
      else if (asked.length < MAX_PINNED_LOOKUPS) {
        asked.push(pin);
        pinned.set(pin, UNREAD);
      } else pinned.set(pin, UNREAD);
    }
    if (asked.length > 0) {
      const found = await Promise.all(asked.map((pin) => this.plans.get(accountId, planId, pin)));
      asked.forEach((pin, i) => pinned.set(pin, found[i] as PlanLookup));
    }
    let unavailable = 0;
    const verdicts = events.map((event, index): PlanVerdict => {
      const pin = pins[index];
      let lookup = bound;
      let notice: Violation | undefined;
      if (pin !== undefined) {
        const asked = pinned.get(pin) as PlanLookup;
        if (asked.state === 'not_found') {
          notice = {
            code: 'unknown_pinned_version',
            path: '/context/ruddertyper/trackingPlanVersion',
            keyword: 'rule',
            message: `the event pins version ${pin} of the tracking plan, which does not exist; version ${version} applied`,
          };
        } else lookup = asked;
      }
      if (lookup.state !== 'ready') {
        unavailable += 1;
        return UNAVAILABLE;
      }
      const violations = this.validate(accountId, lookup.plan, event);
      if (violations === undefined) {
        unavailable += 1;
        return UNAVAILABLE;
      }
      if (notice) violations.unshift(notice);
      return verdictOf(lookup.plan.meta.version, violations);
    });
    this.metrics.planUnavailable(unavailable);
    if (bound.state === 'not_found')
      this.logFailure(accountId, planId, version, 'the bound version does not exist');
    return { plan: { planId, version, policy: binding.policy }, verdicts };
  }

  /**
   * Counts the violations of the events committed (their verdicts): in the metrics by code,
   * and in the ledger by plan version, write key, event, code and path, with a sample of each.
   */
  count(
    accountId: string,
    writeKeyId: string,
    planId: string,
    events: readonly TrackingEvent[],
    verdicts: readonly PlanVerdict[],
    receivedAt: string,
  ): void {
    const byCode = new Map<string, number>();
    const entries = new Map<string, ViolationEntry>();
    const add = (
      event: TrackingEvent,
      version: number | null,
      code: string,
      path: string,
      message: string,
    ) => {
      const eventName = nameOf(event);
      const id = `${version}\u0000${event.type}\u0000${eventName}\u0000${code}\u0000${path}`;
      const entry = entries.get(id);
      if (entry) {
        entry.count += 1;
        return;
      }
      entries.set(id, {
        key: { planId, version, writeKeyId, eventType: event.type, eventName, code, path },
        count: 1,
        sample: () => ({
          messageId: typeof event.messageId === 'string' ? event.messageId : null,
          receivedAt,
          message,
          payload: debugPayload(event, SAMPLE_PAYLOAD_MAX_BYTES).payload,
        }),
      });
    };
    verdicts.forEach((verdict, index) => {
      const event = events[index];
      if (verdict.version === null && event)
        add(event, null, PLAN_UNAVAILABLE, '', 'the tracking plan could not be read');
      for (const violation of verdict.violations) {
        byCode.set(violation.code, (byCode.get(violation.code) ?? 0) + 1);
        if (event) add(event, verdict.version, violation.code, violation.path, violation.message);
      }
    });
    for (const [code, count] of byCode) this.metrics.planViolations(code, count);
    if (this.ledger && entries.size > 0) this.ledger.record(accountId, [...entries.values()]);
  }

  /** The event's violations; undefined when the plan throws (a schema that does not compile). */
  private validate(accountId: string, plan: CompiledPlan, event: TrackingEvent): Violation[] | undefined {
    try {
      return plan.validate(event as unknown as Readonly<Record<string, unknown>>, ruleVersionPin(event));
    } catch (error) {
      this.logFailure(accountId, plan.meta.planId, plan.meta.version, (error as Error).message);
      return undefined;
    }
  }

  private logFailure(accountId: string, planId: string, version: number, error: string): void {
    const key = `${accountId}\u0000${planId}\u0000${version}`;
    const now = this.now();
    const last = this.loggedAt.get(key);
    if (last !== undefined && now - last < PLAN_FAILURE_LOG_INTERVAL_MS) return;
    if (this.loggedAt.size >= MAX_LOGGED) this.loggedAt.clear();
    this.loggedAt.set(key, now);
    this.logger.error('tracking plan cannot validate; events accepted and flagged plan_unavailable', {
      accountId,
      planId,
      version,
      error,
    });
  }
}
