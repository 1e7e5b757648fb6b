import type { ErrorObject, ValidateFunction } from 'ajv';
import { escapePointerToken } from './json-pointer';
import { documentProblems } from './plan-check';
import {
  compileSchemas,
  LazyCompileFailed,
  type CompiledRule,
  type CompileOptions,
  type PlanProblem,
} from './plan-compile';
import type { RuleType, TrackingPlan } from './plan-document';

/** What an event can do wrong against a plan; each code is stable (it travels with the event). */
export const violationCodes = [
  'unplanned_event',
  'unplanned_property',
  'missing_required',
  'type_mismatch',
  'value_not_allowed',
  'common_schema',
  'unknown_pinned_version',
] as const;
export type ViolationCode = (typeof violationCodes)[number];

export interface Violation {
  code: ViolationCode;
  /** JSON Pointer into the event (RFC 6901: `~0` for `~`, `~1` for `/`). */
  path: string;
  /** The JSON Schema keyword that failed, or `rule` when no rule (or no such version) applies. */
  keyword: string;
  message: string;
  /** The version of the rule the event was held to; absent for common-schema and unplanned ones. */
  ruleVersion?: number;
}

/** Which plan version a compiled plan is; kept with it for the violations' envelope. */
export interface PlanMeta {
  planId: string;
  version: number;
}

export interface CompiledPlan {
  readonly meta: PlanMeta;
  /**
   * The violations of one event (already valid against the tracking API's own contract), in
   * the order found; none when it keeps to the plan. `pin` is the rule version the client asked
   * for (`ruleVersionPin`); without one, the latest version of the event's rule applies.
   */
  validate(event: Readonly<Record<string, unknown>>, pin?: number): Violation[];
}

/** A plan that does not pass checkPlan, given to compilePlan. */
export class InvalidTrackingPlan extends Error {
  readonly code = 'TRACKING_PLAN_INVALID';

  constructor(readonly problems: PlanProblem[]) {
    super(`tracking plan is invalid: ${problems.map((p) => `${p.code} at ${p.path || '/'}`).join(', ')}`);
    this.name = 'InvalidTrackingPlan';
  }
}

/** The rule version an event pins, as Segment's generated clients send it; undefined when none is valid. */
export function ruleVersionPin(event: Readonly<Record<string, unknown>>): number | undefined {
  const context = event.context as { protocols?: { event_version?: unknown } } | undefined;
  const pin = context?.protocols?.event_version;
  return Number.isInteger(pin) && (pin as number) >= 1 ? (pin as number) : undefined;
}

const keywordCodes: Readonly<Record<string, ViolationCode>> = {
  required: 'missing_required',
  dependencies: 'missing_required',
  dependentRequired: 'missing_required',
  additionalProperties: 'unplanned_property',
  unevaluatedProperties: 'unplanned_property',
  propertyNames: 'unplanned_property',
  'false schema': 'unplanned_property',
  type: 'type_mismatch',
};

/** Keywords whose own error sums up the errors ajv reports from inside them. */
const summarizing = new Set(['anyOf', 'oneOf', 'propertyNames']);

/** The property an error is about, when the keyword names one below the failing object. */
function namedProperty(error: ErrorObject): string | undefined {
  const params = error.params as Record<string, unknown>;
  const name =
    params.missingProperty ?? params.additionalProperty ?? params.unevaluatedProperty ?? params.propertyName;
  return typeof name === 'string' ? name : undefined;
}

/** ajv's errors as violations: one per failure, unions and property-name checks summed up. */
function violationsOf(errors: readonly ErrorObject[], ruleVersion: number | undefined): Violation[] {
  const inside = new Set<ErrorObject>();
  const summaries = errors.filter((e) => summarizing.has(e.keyword));
  for (const summary of summaries)
    for (const e of errors)
      if (e !== summary && e.schemaPath.startsWith(`${summary.schemaPath}/`)) inside.add(e);
  const found: Violation[] = [];
  const keys = new Set<string>();
  for (const error of errors) {
    // An if's own error only says which branch failed; that branch's errors say why.
    if (inside.has(error) || error.keyword === 'if') continue;
    const property = namedProperty(error);
    const path =
      property === undefined ? error.instancePath : `${error.instancePath}/${escapePointerToken(property)}`;
    let code: ViolationCode = keywordCodes[error.keyword] ?? 'value_not_allowed';
    let text = error.message ?? 'is invalid';
    if (error.keyword === 'anyOf' || error.keyword === 'oneOf') {
      // A value of none of the union's types is a type mismatch, said in one message.
      const branches = errors.filter((e) => e.schemaPath.startsWith(`${error.schemaPath}/`));
      if (
        branches.length > 0 &&
        branches.every((e) => e.keyword === 'type' && e.instancePath === error.instancePath)
      ) {
        code = 'type_mismatch';
        text = `must be ${branches.map((e) => String(e.params.type)).join(' or ')}`;
      }
    }
    if (ruleVersion === undefined) code = 'common_schema';
    const key = `${code}\u0000${path}\u0000${error.keyword}`;
    if (keys.has(key)) continue;
    keys.add(key);
    const where = path === '' ? 'event' : path;
    const message =
      code === 'missing_required' || (code === 'common_schema' && error.keyword === 'required')
        ? `${where} is required`
        : code === 'unplanned_property'
          ? `${where} is not in the plan`
          : `${where} ${text}`;
    found.push(
      ruleVersion === undefined
        ? { code, path, keyword: error.keyword, message }
        : { code, path, keyword: error.keyword, message, ruleVersion },
    );
  }
  return found;
}

interface RuleFamily {
  versions: Map<number, CompiledRule>;
  latest: CompiledRule;
}

/** The rules of one type, by name; the rule without a name under `undefined`. */
type RulesByName = Map<string | undefined, RuleFamily>;

function familiesOf(rules: readonly CompiledRule[]): Map<RuleType, RulesByName> {
  const byType = new Map<RuleType, RulesByName>();
  for (const compiled of rules) {
    let byName = byType.get(compiled.rule.type);
    if (!byName) byType.set(compiled.rule.type, (byName = new Map()));
    const family = byName.get(compiled.rule.name);
    if (!family)
      byName.set(compiled.rule.name, { versions: new Map([[compiled.version, compiled]]), latest: compiled });
    else {
      family.versions.set(compiled.version, compiled);
      if (compiled.version > family.latest.version) family.latest = compiled;
    }
  }
  return byType;
}

/**
 * The rule family an event answers to, or what is wrong when none does:
 * - track: the rule named as the event; none is an unplanned event.
 * - page and screen: the rule named as the page, else the rule without a name; when the plan has
 *   rules of that type but none applies, the page is unplanned (naming pages without a catch-all
 *   rule says which pages there are).
 * - identify, group and alias: their one rule; a plan without one leaves the type unconstrained.
 */
function familyOf(
  families: Map<RuleType, RulesByName>,
  event: Readonly<Record<string, unknown>>,
): RuleFamily | Violation | undefined {
  const type = event.type as RuleType;
  const byName = families.get(type);
  if (type === 'track') {
    const name = event.event;
    const family = typeof name === 'string' ? byName?.get(name) : undefined;
    return (
      family ?? {
        code: 'unplanned_event',
        path: '/event',
        keyword: 'rule',
        message: `track ${JSON.stringify(name)} is not in the plan`,
      }
    );
  }
  if (!byName) return undefined;
  if (type === 'page' || type === 'screen') {
    const name = typeof event.name === 'string' ? event.name : undefined;
    const family = (name === undefined ? undefined : byName.get(name)) ?? byName.get(undefined);
    return (
      family ?? {
        code: 'unplanned_event',
        path: '/name',
        keyword: 'rule',
        message: `${type} ${name === undefined ? 'without a name' : JSON.stringify(name)} is not in the plan`,
      }
    );
  }
  return byName.get(undefined);
}

/**
 * Compiles a checked plan (every schema, by ajv with allErrors, on an engine of its own) into a
 * validator for events. Throws InvalidTrackingPlan when the plan does not pass checkPlan.
 *
 * With `lazy`, each schema is compiled on the first event that needs it (about 6 ms a rule on
 * the development machine) rather than all at once (a 50-rule plan takes about 300 ms, during
 * which a server answers nobody). The plan's shape and document-level checks run now; a schema's own are
 * run when it is compiled, and `validate` throws InvalidTrackingPlan when that schema fails
 * them (a published plan passed them all, so only a plan checked by another version of this
 * library could).
 */
export function compilePlan(plan: TrackingPlan, meta: PlanMeta, options: CompileOptions = {}): CompiledPlan {
  // Lazily, a schema is first looked at by an event: the plan's shape is checked now (a plan
  // read from elsewhere is not trusted to be one), about 1 ms for 50 rules.
  if (options.lazy) {
    const shape = documentProblems(plan);
    if (shape.length > 0) throw new InvalidTrackingPlan(shape);
  }
  const { problems, compiled } = compileSchemas(plan, options);
  if (!compiled) throw new InvalidTrackingPlan(problems);
  const families = familiesOf(compiled.rules);
  const compiledNow = (validator: () => ValidateFunction): ValidateFunction => {
    try {
      return validator();
    } catch (error) {
      throw error instanceof LazyCompileFailed ? new InvalidTrackingPlan(error.problems) : error;
    }
  };
  return {
    meta: { ...meta },
    validate(event, pin) {
      const violations: Violation[] = [];
      const common = compiled.common && compiledNow(compiled.common);
      if (common && !common(event)) violations.push(...violationsOf(common.errors ?? [], undefined));
      const found = familyOf(families, event);
      if (found === undefined) return violations;
      if (!('versions' in found)) return [found, ...violations];
      let rule = found.latest;
      if (pin !== undefined) {
        const pinned = found.versions.get(pin);
        if (pinned) rule = pinned;
        else
          violations.unshift({
            code: 'unknown_pinned_version',
            path: '/context/protocols/event_version',
            keyword: 'rule',
            message: `the event pins version ${pin} of its rule, which the plan does not have; version ${rule.version} applied`,
            ruleVersion: rule.version,
          });
      }
      const validate = compiledNow(rule.validator);
      if (!validate(event)) violations.push(...violationsOf(validate.errors ?? [], rule.version));
      return violations;
    },
  };
}
