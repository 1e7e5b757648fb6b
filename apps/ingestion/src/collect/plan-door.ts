import {
  MAX_VIOLATIONS_PER_EVENT,
  type EnvelopePlan,
  type PlanVerdict,
  type TrackingEvent,
} from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
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

/** An event's verdict when its plan cannot be read: accepted, flagged, never dropped. */
const UNAVAILABLE: PlanVerdict = Object.freeze({ version: null, violations: [] }) as PlanVerdict;

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

  /** Counts the violations of the events committed (their verdicts). */
  count(verdicts: readonly PlanVerdict[]): void {
    const byCode = new Map<string, number>();
    for (const verdict of verdicts)
      for (const violation of verdict.violations)
        byCode.set(violation.code, (byCode.get(violation.code) ?? 0) + 1);
    for (const [code, count] of byCode) this.metrics.planViolations(code, count);
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
