export {
  describeRule,
  namedRuleTypes,
  planCaps,
  ruleKeyOf,
  ruleSchema,
  ruleTypes,
  ruleVersionOf,
  trackingPlanSchema,
  type JsonSchema,
  type PlanRule,
  type RuleKey,
  type RuleType,
  type TrackingPlan,
} from './plan-document';
export { canonicalJson, planHash } from './canonical-json';
export { escapePointerToken, pointerOf } from './json-pointer';
export {
  planProblemCodes,
  type CompileOptions,
  type PlanProblem,
  type PlanProblemCode,
} from './plan-compile';
export { checkPlan, type PlanCheck } from './plan-check';
export {
  compilePlan,
  InvalidTrackingPlan,
  ruleVersionPin,
  violationCodes,
  type CompiledPlan,
  type PlanMeta,
  type Violation,
  type ViolationCode,
} from './plan-validator';
export { schemaDialects, type SchemaDialect } from './schema-engine';
export {
  changeKinds,
  diffPlans,
  type ChangeCode,
  type ChangedRule,
  type ChangeKind,
  type PlanChange,
} from './plan-diff';
export type { FormatProblem, FormatResult } from './formats/format-problem';
export {
  exportSegmentRules,
  importSegmentRules,
  type SegmentRule,
  type SegmentRules,
  type SegmentRuleType,
} from './formats/segment';
export { importRudderCliProject } from './formats/rudderstack';
export {
  actionFor,
  checkPolicy,
  classOfViolation,
  decideEvent,
  decideVerdict,
  omitPaths,
  planActionOf,
  omittableClasses,
  omittablePath,
  policyActions,
  policyCaps,
  violationClasses,
  WAREHOUSE_DESTINATION,
  type DecidedVerdict,
  type EventDecision,
  type PlanAction,
  type PlanPolicy,
  type PolicyAction,
  type PolicyActions,
  type PolicyProblem,
  type ViolationClass,
} from './plan-policy';
