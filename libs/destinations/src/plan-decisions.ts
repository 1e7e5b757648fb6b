import type { OutboxEnvelope } from '@pipeline/events';
import {
  actionFor,
  decideEvent,
  violationClasses,
  type EventDecision,
  type PlanPolicy,
  type Violation,
} from '@pipeline/tracking-plans';

/**
 * The dead-letter reason of an event a tracking plan's policy keeps out of a destination
 * (docs/tracking-plans.md, "Enforcement"). Quarantine is a dead letter of that destination: kept
 * with its violations (the record's verdicts), listed, replayed and discarded as dead letters
 * are, never delivered untouched and never lost.
 */
export const PLAN_QUARANTINED = 'plan_quarantined';

export const quarantineReason = (envelope: OutboxEnvelope): string =>
  `${PLAN_QUARANTINED}: the policy of tracking plan ${envelope.plan?.planId ?? 'unknown'} keeps these events out`;

/**
 * What `destination` (an integration id, or `warehouse`) does with the event at `index` of an
 * envelope; undefined when its write key bound no plan. An event the door could not check
 * (version null) is allowed: a plan never makes an event wait or disappear.
 */
export function planDecision(
  envelope: OutboxEnvelope,
  index: number,
  destination: string,
): EventDecision | undefined {
  const { plan, verdicts } = envelope;
  if (!plan || !verdicts) return undefined;
  const verdict = verdicts[index];
  // Stryker disable next-line ConditionalExpression: decideEvent allows no violations too; this spares the call
  if (!verdict || verdict.violations.length === 0) return { action: 'allow', omitted: [] };
  const decision = decideEvent(verdict.violations, plan.policy, destination);
  // Violations the door found but did not list (beyond its cap per event) are of classes not
  // known here: unless every class is allowed, the event is quarantined, never let through with
  // a value its policy would have stripped or kept out.
  if ((verdict.unlisted ?? 0) > 0 && !allowsEverything(plan.policy, destination))
    return { action: 'quarantine', omitted: [] };
  return decision;
}

/** Whether `destination` lets every violation class through under `policy`. */
const allowsEverything = (policy: PlanPolicy, destination: string): boolean =>
  violationClasses.every((c) => actionFor(policy, c, destination) === 'allow');

/** The warehouse's `plan_violations` value of a stored event: what it was held to and what was done. */
export interface PlanViolationsColumn {
  planId: string;
  /** null: the plan could not be read and the event was not checked. */
  version: number | null;
  violations: Violation[];
  action: EventDecision['action'];
  /** The values stripped from the row (JSON Pointers), with `omit`. */
  omitted: string[];
}

/**
 * The `plan_violations` column of the event at `index`: null when no plan is bound or the event
 * keeps to it, so `plan_violations IS NOT NULL` finds every event with something to look at.
 */
export function planViolationsColumn(
  envelope: OutboxEnvelope,
  index: number,
  decision: EventDecision | undefined,
): PlanViolationsColumn | null {
  const verdict = envelope.verdicts?.[index];
  if (!envelope.plan || !verdict || (verdict.version !== null && verdict.violations.length === 0))
    return null;
  return {
    planId: envelope.plan.planId,
    version: verdict.version,
    violations: verdict.violations,
    action: decision?.action ?? 'allow',
    omitted: decision?.omitted ?? [],
  };
}
