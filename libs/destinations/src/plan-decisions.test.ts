import type { OutboxEnvelope, PlanVerdict } from '@pipeline/events';
import type { PlanPolicy, Violation } from '@pipeline/tracking-plans';
import {
  isQuarantineReason,
  planDecision,
  planViolationsColumn,
  quarantinedOutcomes,
  quarantineReason,
} from './plan-decisions';

const violation: Violation = {
  code: 'unplanned_property',
  path: '/properties/x',
  keyword: 'k',
  message: 'm',
};
const envelopeOf = (verdicts: PlanVerdict[] | undefined, policy: PlanPolicy): OutboxEnvelope => ({
  v: 2,
  accountId: 'a',
  writeKeyId: 'w',
  batchId: 'b',
  receivedAt: '2026-11-29T10:00:00.000Z',
  ip: null,
  userAgent: null,
  events: (verdicts ?? [{ version: 1, violations: [] }]).map(
    (_, i) => ({ type: 'track', event: 'E', messageId: `m${i}` }) as OutboxEnvelope['events'][number],
  ),
  ...(verdicts ? { plan: { planId: 'p', version: 1, policy }, verdicts } : {}),
});

describe('planDecision', () => {
  const omit: PlanPolicy = {
    actions: { unplanned_property: 'omit' },
    destinations: { warehouse: { unplanned_property: 'allow' } },
  };

  it('decides nothing without a plan, and allows a clean or unchecked event', () => {
    expect(planDecision(envelopeOf(undefined, omit), 0, 'warehouse')).toBeUndefined();
    const planOnly = { ...envelopeOf([{ version: 1, violations: [violation] }], omit), verdicts: undefined };
    expect(planDecision(planOnly, 0, 'amplitude')).toBeUndefined();
    const verdictsOnly = { ...envelopeOf([{ version: 1, violations: [violation] }], omit), plan: undefined };
    expect(planDecision(verdictsOnly, 0, 'amplitude')).toBeUndefined();
    expect(planViolationsColumn(verdictsOnly, 0, undefined)).toBeNull();
    const envelope = envelopeOf(
      [
        { version: 1, violations: [] },
        { version: null, violations: [] },
      ],
      omit,
    );
    expect(planDecision(envelope, 0, 'x')).toEqual({ action: 'allow', omitted: [] });
    expect(planDecision(envelope, 1, 'x')).toEqual({ action: 'allow', omitted: [] });
    expect(planDecision(envelope, 7, 'x')).toEqual({ action: 'allow', omitted: [] });
  });

  it('takes the destination’s policy', () => {
    const envelope = envelopeOf([{ version: 1, violations: [violation] }], omit);
    expect(planDecision(envelope, 0, 'amplitude')).toEqual({ action: 'omit', omitted: ['/properties/x'] });
    expect(planDecision(envelope, 0, 'warehouse')).toEqual({ action: 'allow', omitted: [] });
  });

  it('quarantines an event with unlisted violations unless its destination allows every class', () => {
    const envelope = envelopeOf([{ version: 1, violations: [violation], unlisted: 3 }], omit);
    expect(planDecision(envelope, 0, 'amplitude')).toEqual({ action: 'quarantine', omitted: [] });
    const allowing = envelopeOf([{ version: 1, violations: [violation], unlisted: 3 }], {
      actions: { unplanned_property: 'allow' },
    });
    expect(planDecision(allowing, 0, 'amplitude')).toEqual({ action: 'allow', omitted: [] });
    // The warehouse override allows the listed class only: the unlisted ones may be of another.
    const partly = envelopeOf([{ version: 1, violations: [violation], unlisted: 1 }], {
      actions: { unplanned_property: 'omit', wrong_value: 'quarantine' },
      destinations: { warehouse: { unplanned_property: 'allow' } },
    });
    expect(planDecision(partly, 0, 'warehouse')).toEqual({ action: 'quarantine', omitted: [] });
  });
});

describe('quarantinedOutcomes', () => {
  it('groups the events by their distinct violation codes, unlisted ones counted', () => {
    const wrong = { ...violation, code: 'type_mismatch' as const, path: '/properties/total' };
    const envelope = envelopeOf(
      [
        { version: 1, violations: [violation, wrong, violation] },
        { version: 1, violations: [violation], unlisted: 4 },
        { version: 1, violations: [wrong, violation] },
      ],
      { actions: { unplanned_property: 'quarantine' } },
    );
    const [first, second, third] = envelope.events.map((e) => e.messageId);
    expect(quarantinedOutcomes(envelope)).toEqual([
      { reason: 'unplanned_property,type_mismatch', messageIds: [first] },
      { reason: 'unplanned_property,+4 unlisted', messageIds: [second] },
      { reason: 'type_mismatch,unplanned_property', messageIds: [third] },
    ]);
    expect(isQuarantineReason(quarantineReason(envelope))).toBe(true);
    expect(isQuarantineReason('http_400: bad request')).toBe(false);
  });
});

describe('planViolationsColumn', () => {
  it('is null without a plan or for a clean event, and says what was done otherwise', () => {
    const envelope = envelopeOf(
      [
        { version: 1, violations: [] },
        { version: 1, violations: [violation] },
        { version: null, violations: [] },
      ],
      { actions: {} },
    );
    expect(planViolationsColumn(envelopeOf(undefined, { actions: {} }), 0, undefined)).toBeNull();
    expect(planViolationsColumn(envelope, 0, { action: 'allow', omitted: [] })).toBeNull();
    expect(planViolationsColumn(envelope, 1, { action: 'omit', omitted: ['/properties/x'] })).toEqual({
      planId: 'p',
      version: 1,
      violations: [violation],
      action: 'omit',
      omitted: ['/properties/x'],
    });
    expect(planViolationsColumn(envelope, 2, undefined)).toEqual({
      planId: 'p',
      version: null,
      violations: [],
      action: 'allow',
      omitted: [],
    });
  });

  it('names the plan in the quarantine reason, or says it is unknown', () => {
    expect(quarantineReason(envelopeOf(undefined, { actions: {} }))).toBe(
      'plan_quarantined: the policy of tracking plan unknown keeps these events out',
    );
    expect(quarantineReason(envelopeOf([{ version: 1, violations: [] }], { actions: {} }))).toBe(
      'plan_quarantined: the policy of tracking plan p keeps these events out',
    );
  });
});
