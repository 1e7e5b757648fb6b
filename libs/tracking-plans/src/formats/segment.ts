import { pointerOf } from '../json-pointer';
import type { JsonSchema, PlanRule, RuleType, TrackingPlan } from '../plan-document';
import { isRecord, type FormatProblem, type FormatResult } from './format-problem';

// Segment's Public API rules of a tracking plan (listRulesFromTrackingPlan's answer,
// replaceRulesInTrackingPlan's body): a rule is `{ type, key?, version, jsonSchema }`, and its
// jsonSchema is already a schema of the whole event, as ours is. COMMON is our `common`.

export type SegmentRuleType = 'TRACK' | 'IDENTIFY' | 'GROUP' | 'PAGE' | 'SCREEN' | 'COMMON';

export interface SegmentRule {
  type: SegmentRuleType;
  key?: string;
  version: number;
  jsonSchema: JsonSchema;
}

export interface SegmentRules {
  rules: SegmentRule[];
}

const typeOf: Readonly<Record<Exclude<SegmentRuleType, 'COMMON'>, RuleType>> = {
  TRACK: 'track',
  IDENTIFY: 'identify',
  GROUP: 'group',
  PAGE: 'page',
  SCREEN: 'screen',
};
/** Members Segment's server sets; they say nothing about what an event may hold. */
const bookkeeping = new Set(['createdAt', 'updatedAt']);
const known = new Set(['type', 'key', 'version', 'jsonSchema', ...bookkeeping]);

/**
 * A plan from Segment's rules (`{ rules }`, or the API's `{ data: { rules } }`). Refuses, naming
 * each, what has no equivalent: a deprecated rule, a key on a rule type that has none, a second
 * COMMON rule or a COMMON version other than 1, a rule without a schema. Run checkPlan on the
 * plan it returns: its schemas are checked there.
 */
export function importSegmentRules(input: unknown): FormatResult<TrackingPlan> {
  const wrapped = isRecord(input) && isRecord(input.data) ? input.data : input;
  const base = wrapped === input ? '' : '/data';
  if (!isRecord(wrapped) || !Array.isArray(wrapped.rules))
    return {
      ok: false,
      problems: [{ code: 'invalid_input', path: `${base}/rules`, message: 'rules must be a list' }],
    };
  const problems: FormatProblem[] = [];
  const plan: TrackingPlan = { rules: [] };
  wrapped.rules.forEach((rule: unknown, index) => {
    const at = `${base}${pointerOf(['rules', index])}`;
    const problem = (code: FormatProblem['code'], member: string, message: string) =>
      problems.push({ code, path: member === '' ? at : `${at}/${member}`, message });
    if (!isRecord(rule)) return problem('invalid_input', '', 'a rule must be an object');
    const type = rule.type;
    if (typeof type !== 'string' || !(type === 'COMMON' || type in typeOf))
      return problem('invalid_input', 'type', `type ${JSON.stringify(type)} is not a Segment rule type`);
    for (const member of Object.keys(rule))
      if (!known.has(member))
        problem(
          'not_mappable',
          member,
          member === 'deprecatedAt'
            ? 'a deprecated rule has no equivalent: remove it before importing'
            : `${member} has no equivalent in a plan`,
        );
    const { key, version, jsonSchema } = rule;
    if (!Number.isInteger(version) || (version as number) < 1)
      problem('invalid_input', 'version', 'version must be an integer from 1');
    if (!isRecord(jsonSchema))
      problem('invalid_input', 'jsonSchema', 'jsonSchema must be a JSON Schema object');
    if (key !== undefined && typeof key !== 'string') problem('invalid_input', 'key', 'key must be text');
    if (type === 'COMMON') {
      if (key !== undefined) problem('not_mappable', 'key', 'the COMMON rule has no key');
      if (version !== 1)
        problem('not_mappable', 'version', 'the common schema has no versions: COMMON must be version 1');
      if (plan.common !== undefined) problem('not_mappable', '', 'a plan has one COMMON rule');
      if (isRecord(jsonSchema)) plan.common = jsonSchema;
      return;
    }
    const ours = typeOf[type as keyof typeof typeOf];
    const named = ours === 'track' || ours === 'page' || ours === 'screen';
    if (ours === 'track' && (typeof key !== 'string' || key === ''))
      problem('invalid_input', 'key', 'a TRACK rule names its event in key');
    if (!named && key !== undefined)
      problem('not_mappable', 'key', `${type === 'GROUP' ? 'a' : 'an'} ${type} rule has no key here`);
    if (named && key === '')
      problem('not_mappable', 'key', `an empty key: leave it out for every ${type.toLowerCase()}`);
    if (!isRecord(jsonSchema) || !Number.isInteger(version)) return;
    const mapped: PlanRule = { type: ours, version: version as number, schema: jsonSchema };
    if (typeof key === 'string' && key !== '') mapped.name = key;
    plan.rules.push(mapped);
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: plan };
}

/**
 * Segment's rules for a plan: the common schema first as COMMON (version 1), then each rule.
 * Refuses what Segment cannot hold: alias rules and rule descriptions.
 */
export function exportSegmentRules(plan: TrackingPlan): FormatResult<SegmentRules> {
  const problems: FormatProblem[] = [];
  const rules: SegmentRule[] =
    plan.common === undefined ? [] : [{ type: 'COMMON', version: 1, jsonSchema: plan.common }];
  plan.rules.forEach((rule, index) => {
    const at = pointerOf(['rules', index]);
    if (rule.type === 'alias')
      return problems.push({
        code: 'not_mappable',
        path: `${at}/type`,
        message: 'Segment has no alias rules',
      });
    if (rule.description !== undefined)
      problems.push({
        code: 'not_mappable',
        path: `${at}/description`,
        message: "Segment's rules have no description: move it into the schema's own description",
      });
    const type = rule.type.toUpperCase() as SegmentRuleType;
    rules.push(
      rule.name === undefined
        ? { type, version: rule.version ?? 1, jsonSchema: rule.schema }
        : { type, key: rule.name, version: rule.version ?? 1, jsonSchema: rule.schema },
    );
  });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: { rules } };
}
