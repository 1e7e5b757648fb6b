import type Ajv from 'ajv';
import type { ValidateFunction } from 'ajv';
import { canonicalJson } from './canonical-json';
import { pointerOf } from './json-pointer';
import {
  describeRule,
  planCaps,
  ruleVersionOf,
  type JsonSchema,
  type PlanRule,
  type TrackingPlan,
} from './plan-document';
import { dialectOf, PatternRefused, schemaEngine, type SchemaDialect } from './schema-engine';
import { nestingDepth, refProblems } from './schema-refs';

/** Why a submitted plan is refused; each code is stable (the management API returns it). */
export const planProblemCodes = [
  'invalid_document',
  'too_many_rules',
  'plan_too_large',
  'schema_too_large',
  'schema_too_deep',
  'rule_name_required',
  'rule_name_not_allowed',
  'duplicate_rule',
  'unsupported_dialect',
  'ref_not_local',
  'ref_unresolved',
  'ref_cycle',
  'pattern_unsupported',
  'property_name_unsupported',
  'schema_invalid',
] as const;
export type PlanProblemCode = (typeof planProblemCodes)[number];

export interface PlanProblem {
  code: PlanProblemCode;
  /** JSON Pointer into the submitted plan. */
  path: string;
  message: string;
}

const byteLength = (text: string) => Buffer.byteLength(text, 'utf8');
const clip = (text: string) => (text.length > 500 ? `${text.slice(0, 497)}...` : text);

/**
 * What is wrong with one schema on its own (the common schema or a rule's), before and while
 * compiling it. Returns the compiled function when nothing is.
 */
function compileSchema(
  schema: JsonSchema,
  at: string,
  engines: Map<SchemaDialect, Ajv>,
): { problems: PlanProblem[]; validate?: ValidateFunction } {
  const depth = nestingDepth(schema);
  if (depth > planCaps.maxSchemaDepth)
    return {
      problems: [
        {
          code: 'schema_too_deep',
          path: at,
          message: `schema nests ${depth} levels; at most ${planCaps.maxSchemaDepth} are accepted`,
        },
      ],
    };
  const bytes = byteLength(canonicalJson(schema));
  if (bytes > planCaps.maxSchemaBytes)
    return {
      problems: [
        {
          code: 'schema_too_large',
          path: at,
          message: `schema is ${bytes} bytes; at most ${planCaps.maxSchemaBytes} are accepted`,
        },
      ],
    };
  const dialect = dialectOf(schema);
  if (dialect === undefined)
    return {
      problems: [
        {
          code: 'unsupported_dialect',
          path: `${at}/$schema`,
          message: `$schema ${JSON.stringify(schema.$schema)} is not draft-07 or 2020-12`,
        },
      ],
    };
  const refs = refProblems(schema);
  if (refs.length > 0)
    return {
      problems: refs.map((p) => ({
        code: p.code,
        path: `${at}${p.path}`,
        message:
          p.code === 'property_name_unsupported'
            ? 'a property named __proto__ cannot be planned (the validator ignores it; events that send it see it as unplanned)'
            : p.code === 'ref_not_local'
              ? `$ref ${JSON.stringify(p.ref)} points outside the schema; only local references (#/...) are accepted`
              : p.code === 'ref_unresolved'
                ? `$ref ${JSON.stringify(p.ref)} points at nothing in the schema`
                : `$ref ${JSON.stringify(p.ref)} leads back to itself`,
      })),
    };
  let engine = engines.get(dialect);
  if (!engine) {
    engine = schemaEngine(dialect);
    engines.set(dialect, engine);
  }
  try {
    return { problems: [], validate: engine.compile(schema) };
  } catch (error) {
    if (error instanceof PatternRefused)
      return { problems: [{ code: 'pattern_unsupported', path: at, message: clip(error.message) }] };
    return {
      problems: [
        {
          code: 'schema_invalid',
          path: at,
          message: clip(`schema does not compile: ${(error as Error).message}`),
        },
      ],
    };
  }
}

export interface CompiledRule {
  rule: PlanRule;
  version: number;
  /** The rule's compiled schema: compiled already, or on this first call (a lazy plan). */
  validator(): ValidateFunction;
}

export interface CompiledSchemas {
  common?: () => ValidateFunction;
  rules: CompiledRule[];
}

/** A schema of a lazy plan that fails its checks or its compile when first used. */
export class LazyCompileFailed extends Error {
  constructor(readonly problems: PlanProblem[]) {
    super(problems.map((p) => `${p.code} at ${p.path || '/'}`).join(', '));
    this.name = 'LazyCompileFailed';
  }
}

/** A schema compiled on its first use, once; a failure is thrown on every use. */
function lazySchema(
  schema: JsonSchema,
  at: string,
  engines: Map<SchemaDialect, Ajv>,
  onCompiled?: (ms: number) => void,
): () => ValidateFunction {
  let compiled: ValidateFunction | undefined;
  let failed: LazyCompileFailed | undefined;
  return () => {
    if (compiled) return compiled;
    if (failed) throw failed;
    const started = performance.now();
    const result = compileSchema(schema, at, engines);
    onCompiled?.(performance.now() - started);
    if (!result.validate) throw (failed = new LazyCompileFailed(result.problems));
    return (compiled = result.validate);
  };
}

/** What compileSchemas is told: `lazy` defers each schema to its first use. */
export interface CompileOptions {
  /**
   * Compile each schema (the common one, each rule) on its first use instead of now. For a plan
   * already checked (a published version): its first events pay about 6 ms for their own rule
   * instead of the whole plan's seconds at once. The plan's document-level checks still run now.
   */
  lazy?: boolean;
  /** Called with the milliseconds of each schema compiled (a histogram's observation). */
  onCompiled?: (ms: number) => void;
}

/**
 * Every check of a plan that has the document's shape, and its compiled schemas when it passes
 * them all. Rules are checked one by one so that every refused rule is named at once.
 */
export function compileSchemas(
  plan: TrackingPlan,
  options: CompileOptions = {},
): { problems: PlanProblem[]; compiled?: CompiledSchemas } {
  if (plan.rules.length > planCaps.maxRules)
    return {
      problems: [
        {
          code: 'too_many_rules',
          path: '/rules',
          message: `plan has ${plan.rules.length} rules; at most ${planCaps.maxRules} are accepted`,
        },
      ],
    };
  const problems: PlanProblem[] = [];
  const engines = new Map<SchemaDialect, Ajv>();
  const eager = (schema: JsonSchema, at: string): (() => ValidateFunction) | undefined => {
    const started = performance.now();
    const result = compileSchema(schema, at, engines);
    options.onCompiled?.(performance.now() - started);
    problems.push(...result.problems);
    const validate = result.validate;
    return validate && (() => validate);
  };
  const prepare = (schema: JsonSchema, at: string) =>
    options.lazy ? lazySchema(schema, at, engines, options.onCompiled) : eager(schema, at);
  const common = plan.common === undefined ? undefined : prepare(plan.common, '/common');
  const seen = new Set<string>();
  const rules: CompiledRule[] = [];
  plan.rules.forEach((rule, index) => {
    const at = pointerOf(['rules', index]);
    const named = rule.type === 'track' || rule.type === 'page' || rule.type === 'screen';
    if (rule.type === 'track' && rule.name === undefined)
      problems.push({
        code: 'rule_name_required',
        path: `${at}/name`,
        message: 'a track rule names its event',
      });
    if (!named && rule.name !== undefined)
      problems.push({
        code: 'rule_name_not_allowed',
        path: `${at}/name`,
        message: `${rule.type === 'group' ? 'a' : 'an'} ${rule.type} rule has no name: one rule (per version) covers every ${rule.type} call`,
      });
    const key = canonicalJson([rule.type, rule.name ?? null, ruleVersionOf(rule)]);
    if (seen.has(key))
      problems.push({
        code: 'duplicate_rule',
        path: at,
        message: `${describeRule({ ...rule, version: ruleVersionOf(rule) })} is in the plan twice`,
      });
    seen.add(key);
    const validator = prepare(rule.schema, `${at}/schema`);
    if (validator) rules.push({ rule, version: ruleVersionOf(rule), validator });
  });
  if (problems.length === 0) {
    const bytes = byteLength(canonicalJson(plan));
    if (bytes > planCaps.maxPlanBytes)
      problems.push({
        code: 'plan_too_large',
        path: '',
        message: `plan is ${bytes} bytes; at most ${planCaps.maxPlanBytes} are accepted`,
      });
  }
  return problems.length > 0 ? { problems } : { problems, compiled: common ? { common, rules } : { rules } };
}
