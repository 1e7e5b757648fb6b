// What the tracking plan pages compute without the API: the policy form's classes and the
// actions each allows, the policy sent from the form's choices, and a plan's problems read from a
// 422. The API checks everything again (checkPlan, checkPolicy: docs/tracking-plans.md); these
// only shape what the form offers.
import { ApiError } from './api';
import type { components } from './generated/openapi';

type Schemas = components['schemas'];
export type PolicyActions = Schemas['PolicyActionsView'];
export type PolicyAction = Schemas['PolicyActionName'];
export type ViolationClass = keyof PolicyActions;
export type PlanPolicy = Schemas['PlanPolicyView'];

/**
 * The violation classes in the order the docs list them. `satisfies` and the check below tie the
 * list to the API's own PolicyActionsView: a class added or renamed there fails the type-check.
 */
export const violationClasses = [
  'unplanned_event',
  'unplanned_property',
  'missing_required',
  'wrong_value',
  'common_schema',
] as const satisfies readonly ViolationClass[];
type Missing = Exclude<ViolationClass, (typeof violationClasses)[number]>;
const everyClassListed: Missing extends never ? true : never = true;
void everyClassListed;

export const classLabels: Record<ViolationClass, string> = {
  unplanned_event: 'Unplanned event',
  unplanned_property: 'Unplanned property',
  missing_required: 'Missing required property',
  wrong_value: 'Wrong type or value',
  common_schema: 'Common schema',
};

/** An unplanned event and a missing property name no value to strip: no `omit` for them. */
export function actionsFor(violationClass: ViolationClass): PolicyAction[] {
  return violationClass === 'unplanned_event' || violationClass === 'missing_required'
    ? ['allow', 'quarantine']
    : ['allow', 'omit', 'quarantine'];
}

/** A destination override's choice per class: an action, or '' to take the default action. */
export type OverrideChoices = Partial<Record<ViolationClass, PolicyAction | ''>>;

/**
 * The policy the form describes: every class's default action written out (so what is read back
 * is what was chosen), and per destination only the classes it overrides.
 */
export function policyOf(
  actions: Record<ViolationClass, PolicyAction>,
  overrides: readonly { destination: string; choices: OverrideChoices }[],
): PlanPolicy {
  const policy: PlanPolicy = { actions: { ...actions } };
  if (overrides.length === 0) return policy;
  const destinations: Record<string, PolicyActions> = {};
  for (const { destination, choices } of overrides) {
    const chosen: PolicyActions = {};
    for (const c of violationClasses) {
      const action = choices[c];
      if (action) chosen[c] = action;
    }
    destinations[destination] = chosen;
  }
  return { ...policy, destinations };
}

/** A problem the API found, at a JSON Pointer into what was sent (a plan, an import, a policy). */
export interface PlanProblem {
  path: string;
  message: string;
  code?: string;
}

/** The problems of a 422 (invalid_tracking_plan, invalid_import, invalid_policy); none otherwise. */
export function problemsOf(error: unknown): PlanProblem[] {
  if (!(error instanceof ApiError) || error.problem.status !== 422) return [];
  return (error.problem.errors ?? []).map((e) => ({
    path: e.path ?? '',
    message: e.message ?? '',
    ...(e.code ? { code: e.code } : {}),
  }));
}

/** The text typed in the draft editor as JSON, or why it is not. */
export function parseDraft(text: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (e) {
    return { ok: false, message: `not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/** A file name for a version's Segment export: the plan's name in safe characters. */
export function exportFileName(planName: string, version: number): string {
  const base =
    planName
      .normalize('NFKD')
      .replace(/[^A-Za-z0-9._-]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 80) || 'tracking-plan';
  return `${base}-v${version}.segment.json`;
}
