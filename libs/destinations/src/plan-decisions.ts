import type { OutboxEnvelope } from '@pipeline/events';
import { decideVerdict, type EventDecision, type Violation } from '@pipeline/tracking-plans';

/**
 * The dead-letter reason of an event a tracking plan's policy keeps out of a destination
 * (docs/tracking-plans.md, "Enforcement"). Quarantine is a dead letter of that destination: kept
 * with its violations (the record's verdicts), listed, replayed and discarded as dead letters
 * are, never delivered untouched and never lost.
 */
export const PLAN_QUARANTINED = 'plan_quarantined';

export const quarantineReason = (envelope: OutboxEnvelope): string =>
  `${PLAN_QUARANTINED}: the policy of tracking plan ${envelope.plan?.planId ?? 'unknown'} keeps these events out`;

/** Whether a failure's reason is a tracking plan's quarantine (quarantineReason). */
export const isQuarantineReason = (reason: string): boolean => reason.startsWith(`${PLAN_QUARANTINED}:`);

/**
 * The live debugger's `quarantined` outcomes of an envelope of quarantined events: its events
 * grouped by what they were kept out for, the codes of their violations (distinct, in order
 * found, comma-separated; `+N unlisted` when the door found more than it listed).
 */
export function quarantinedOutcomes(envelope: OutboxEnvelope): { reason: string; messageIds: string[] }[] {
  const groups = new Map<string, string[]>();
  envelope.events.forEach((event, index) => {
    const verdict = envelope.verdicts?.[index];
    const codes: string[] = [...new Set(verdict?.violations.map((v) => v.code))];
    if (verdict?.unlisted) codes.push(`+${verdict.unlisted} unlisted`);
    const reason = codes.length > 0 ? codes.join(',') : PLAN_QUARANTINED;
    const ids = groups.get(reason) ?? [];
    ids.push(event.messageId);
    groups.set(reason, ids);
  });
  return [...groups].map(([reason, messageIds]) => ({ reason, messageIds }));
}

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
  return verdict ? decideVerdict(verdict, plan.policy, destination) : { action: 'allow', omitted: [] };
}

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
