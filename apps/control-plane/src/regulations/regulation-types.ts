import type { SubjectType } from '@pipeline/tenancy';

/** Segment's regulation types (its Public API's createWorkspaceRegulation), all six. */
export const regulationTypes = [
  'SUPPRESS_ONLY',
  'SUPPRESS_WITH_DELETE',
  'DELETE_ONLY',
  'UNSUPPRESS',
  'DELETE_INTERNAL',
  'SUPPRESS_WITH_DELETE_INTERNAL',
] as const;
export type RegulationType = (typeof regulationTypes)[number];
export type { SubjectType };

/**
 * What a type does: `suppress` sets (true) or lifts (false) the subjects' suppression, or leaves
 * it (null); `deletes` erases what was received up to the cut-off from the warehouses and our own
 * copies; `vendors` also asks each destination that can delete to do so.
 */
export interface RegulationEffect {
  suppress: boolean | null;
  deletes: boolean;
  vendors: boolean;
}

export const effectOf: Readonly<Record<RegulationType, RegulationEffect>> = {
  SUPPRESS_ONLY: { suppress: true, deletes: false, vendors: false },
  SUPPRESS_WITH_DELETE: { suppress: true, deletes: true, vendors: true },
  DELETE_ONLY: { suppress: null, deletes: true, vendors: true },
  UNSUPPRESS: { suppress: false, deletes: false, vendors: false },
  DELETE_INTERNAL: { suppress: null, deletes: true, vendors: false },
  SUPPRESS_WITH_DELETE_INTERNAL: { suppress: true, deletes: true, vendors: false },
};

/** Segment's overall statuses (its API's `overallStatus`). */
export type RegulationStatus = 'INITIALIZED' | 'RUNNING' | 'FINISHED' | 'PARTIAL_SUCCESS' | 'FAILED';
export const regulationStatuses: readonly RegulationStatus[] = [
  'INITIALIZED',
  'RUNNING',
  'FINISHED',
  'PARTIAL_SUCCESS',
  'FAILED',
];

/**
 * One target's state. `not_supported` is an outcome, not a failure (Meta Conversions and Google
 * Ads have no user deletion); `waiting_fence` waits for the target's consumers to pass what was in
 * flight when the regulation took effect; `forwarded` is a vendor that accepted the request and
 * has not confirmed it yet.
 */
export type TargetStatus =
  'not_supported' | 'waiting_fence' | 'pending' | 'running' | 'forwarded' | 'done' | 'failed';

export type TargetKind = 'warehouse' | 'dead_letters' | 'debugger' | 'destination';

const terminal: ReadonlySet<TargetStatus> = new Set(['not_supported', 'done', 'failed']);
export const isTerminal = (status: TargetStatus) => terminal.has(status);

/**
 * The regulation's status from its targets': running while any is not finished; then FINISHED
 * when none failed, FAILED when every target that could act failed, PARTIAL_SUCCESS otherwise.
 * Unlike Segment's API, a target that cannot delete (`not_supported`) never makes it FAILED.
 */
export function overallStatusOf(targets: readonly TargetStatus[]): RegulationStatus {
  if (targets.some((status) => !isTerminal(status))) return 'RUNNING';
  const acting = targets.filter((status) => status !== 'not_supported');
  const failed = acting.filter((status) => status === 'failed').length;
  if (failed === 0) return 'FINISHED';
  return failed === acting.length ? 'FAILED' : 'PARTIAL_SUCCESS';
}

/** The calendar month (UTC) a time falls in, as the monthly quota counts it: `[start, end)`. */
export function monthOf(at: Date): { start: Date; end: Date } {
  const start = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1));
  const end = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1));
  return { start, end };
}
