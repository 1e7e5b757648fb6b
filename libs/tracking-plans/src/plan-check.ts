import Ajv from 'ajv';
import { escapePointerToken } from './json-pointer';
import { compileSchemas, type PlanProblem } from './plan-compile';
import { planCaps, trackingPlanSchema, type TrackingPlan } from './plan-document';

export type PlanCheck = { ok: true; plan: TrackingPlan } | { ok: false; problems: PlanProblem[] };

const documentValidator = new Ajv({ allErrors: true, strict: false }).compile<TrackingPlan>(
  trackingPlanSchema,
);

/**
 * Checks a submitted plan version: its shape, its caps, and every schema in it (dialect, local
 * references only, no cycles, patterns RE2 runs, and that ajv compiles it). A value, never a
 * throw: the plan, or every problem found, each with a stable code and where it is.
 */
export function checkPlan(input: unknown): PlanCheck {
  // Counted before the document check, which would report each of thousands of rules.
  const rules = (input as { rules?: unknown } | null)?.rules;
  if (Array.isArray(rules) && rules.length > planCaps.maxRules)
    return {
      ok: false,
      problems: [
        {
          code: 'too_many_rules',
          path: '/rules',
          message: `plan has ${rules.length} rules; at most ${planCaps.maxRules} are accepted`,
        },
      ],
    };
  const problems = documentProblems(input);
  if (problems.length > 0) return { ok: false, problems };
  const compiled = compileSchemas(input as TrackingPlan).problems;
  return compiled.length > 0 ? { ok: false, problems: compiled } : { ok: true, plan: input as TrackingPlan };
}

/** What makes `input` not a plan document (its shape only, not its schemas'); none when it is one. */
export function documentProblems(input: unknown): PlanProblem[] {
  if (!documentValidator(input)) {
    return (documentValidator.errors ?? []).map((e) => ({
      code: 'invalid_document' as const,
      path:
        e.keyword === 'required'
          ? `${e.instancePath}/${escapePointerToken(String(e.params.missingProperty))}`
          : e.keyword === 'additionalProperties'
            ? `${e.instancePath}/${escapePointerToken(String(e.params.additionalProperty))}`
            : e.instancePath,
      message: `${e.instancePath || 'plan'} ${e.message ?? 'is invalid'}`,
    }));
  }
  return [];
}
