import { Type, type Static } from '@sinclair/typebox';

// The tracking plan document, defined once: TypeBox yields the JSON Schema that checkPlan holds a
// submitted plan to and the TypeScript type every later consumer (the management API, ingestion,
// replay) shares.

/**
 * Caps on one plan version. A plan is compiled by ingestion for every account that binds it, so
 * each cap bounds what one tenant can make the door spend (memory and compile time).
 * Segment documents no public cap on rules per plan; RudderStack caps events per plan by tier
 * (5 on Free, 75 on Growth). 2,000 rules is far above any plan we have seen published, and a
 * 50-rule plan compiles in tens of milliseconds (tools/bench/tracking-plan-validation.js).
 */
export const planCaps = {
  /** Rules in one plan version. */
  maxRules: 2_000,
  /** Bytes of one rule's schema (or the common schema), as canonical JSON. */
  maxSchemaBytes: 64 * 1024,
  /** Bytes of the whole plan, as canonical JSON. */
  maxPlanBytes: 1024 * 1024,
  /** Nesting of objects and arrays in one schema: the event itself may nest 64 levels. */
  maxSchemaDepth: 128,
  /** Characters of one `pattern` or `patternProperties` key (RE2 compiles it in linear time). */
  maxPatternLength: 1_000,
  /** Characters of a rule name: the event name limit of the tracking API. */
  maxNameLength: 200,
  /** Characters of a rule description. */
  maxDescriptionLength: 2_000,
} as const;

/** The event types a rule can constrain: every type of the tracking API. */
export const ruleTypes = ['track', 'identify', 'group', 'page', 'screen', 'alias'] as const;
export type RuleType = (typeof ruleTypes)[number];

/** Types whose rules are told apart by name (track: the event; page and screen: the page name). */
export const namedRuleTypes: readonly RuleType[] = ['track', 'page', 'screen'];

/** A JSON Schema object (draft-07 by default, or 2020-12 when its `$schema` says so). */
export type JsonSchema = { [keyword: string]: unknown };

const jsonSchema = Type.Record(Type.String(), Type.Unknown(), {
  description: 'A JSON Schema of the whole event as the tracking API receives it',
});

export const ruleSchema = Type.Object(
  {
    type: Type.Union(ruleTypes.map((t) => Type.Literal(t))),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: planCaps.maxNameLength })),
    version: Type.Optional(Type.Integer({ minimum: 1 })),
    description: Type.Optional(Type.String({ maxLength: planCaps.maxDescriptionLength })),
    schema: jsonSchema,
  },
  { additionalProperties: false },
);

export const trackingPlanSchema = Type.Object(
  {
    common: Type.Optional(jsonSchema),
    rules: Type.Array(ruleSchema),
  },
  { additionalProperties: false },
);

export interface PlanRule {
  type: RuleType;
  /** track: the event name (required); page/screen: the page name (absent: every page). */
  name?: string;
  /** The rule's own version, as Segment's `context.protocols.event_version` pins it; 1 when absent. */
  version?: number;
  description?: string;
  schema: JsonSchema;
}

/** The content of one plan version. */
export interface TrackingPlan {
  /** Applies to every event, whatever its type and rule. */
  common?: JsonSchema;
  rules: PlanRule[];
}

// The interfaces above are what readers see; this line keeps them equal to the schema.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _documentTypeMatchesSchema: Same<Static<typeof trackingPlanSchema>, TrackingPlan> = true;
void _documentTypeMatchesSchema;

/** What tells one rule from another: two rules of a plan never share it. */
export interface RuleKey {
  type: RuleType;
  name?: string;
  version: number;
}

export const ruleVersionOf = (rule: Pick<PlanRule, 'version'>): number => rule.version ?? 1;

export const ruleKeyOf = (rule: PlanRule): RuleKey =>
  rule.name === undefined
    ? { type: rule.type, version: ruleVersionOf(rule) }
    : { type: rule.type, name: rule.name, version: ruleVersionOf(rule) };

export const describeRule = (key: { type: string; name?: string; version?: number }): string =>
  `${key.type}${key.name === undefined ? '' : ` "${key.name}"`}${key.version === undefined ? '' : ` v${key.version}`}`;
