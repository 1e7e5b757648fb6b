import { canonicalJson } from './canonical-json';
import { escapePointerToken } from './json-pointer';
import {
  describeRule,
  ruleVersionOf,
  type JsonSchema,
  type PlanRule,
  type RuleType,
  type TrackingPlan,
} from './plan-document';

/**
 * SchemaVer's three kinds (Snowplow): `breaking` may refuse events the older version accepted,
 * `revision` accepts events the older version refused (and may still refuse some it accepted
 * when it cannot tell), `addition` changes nothing an event can do wrong.
 */
export type ChangeKind = 'breaking' | 'revision' | 'addition';

/** Each change's stable code, with the kind it always has. */
export const changeKinds = {
  rule_removed: 'breaking',
  rule_added: 'addition',
  required_added: 'breaking',
  required_removed: 'revision',
  property_added: 'addition',
  property_removed: 'revision',
  property_removed_closed: 'breaking',
  type_narrowed: 'breaking',
  type_widened: 'revision',
  type_changed: 'breaking',
  enum_added: 'breaking',
  enum_value_removed: 'breaking',
  enum_value_added: 'revision',
  enum_removed: 'revision',
  const_changed: 'breaking',
  const_removed: 'revision',
  additional_properties_tightened: 'breaking',
  additional_properties_loosened: 'revision',
  bound_tightened: 'breaking',
  bound_loosened: 'revision',
  pattern_changed: 'breaking',
  pattern_removed: 'revision',
  format_changed: 'breaking',
  format_removed: 'revision',
  annotation_changed: 'addition',
  schema_changed: 'breaking',
} as const satisfies Record<string, ChangeKind>;
export type ChangeCode = keyof typeof changeKinds;

/** A rule, or the common schema, as a change names it. */
export interface ChangedRule {
  type: RuleType | 'common';
  name?: string;
  version?: number;
}

export interface PlanChange {
  rule: ChangedRule;
  /** JSON Pointer into the event to where the change applies; `/*` stands for every array item. */
  path: string;
  kind: ChangeKind;
  change: ChangeCode;
  message: string;
}

type Emit = (code: ChangeCode, path: string, message: string) => void;

/** Keywords read by people only: a change to them is an addition. */
const annotations = new Set([
  'title',
  'description',
  '$comment',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  'labels',
  '$schema',
]);

/** Keywords this diff reads; any other keyword that differs is a `schema_changed`. */
const understood = new Set([
  'type',
  'required',
  'properties',
  'additionalProperties',
  'enum',
  'const',
  'pattern',
  'format',
  'items',
  ...['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties'],
  ...['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties'],
  'multipleOf',
]);
const lowerBounds = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties']);

const same = (a: unknown, b: unknown) => canonicalJson(a ?? null) === canonicalJson(b ?? null);
const isRecord = (v: unknown): v is JsonSchema => v !== null && typeof v === 'object' && !Array.isArray(v);
const show = (v: unknown) => canonicalJson(v ?? null);

/** The JSON types a schema's `type` allows; undefined when it says nothing (every type). */
function typesOf(schema: JsonSchema): Set<string> | undefined {
  const t = schema.type;
  if (t === undefined) return undefined;
  const listed = new Set(Array.isArray(t) ? t.map(String) : [String(t)]);
  // Every integer is a number.
  if (listed.has('number')) listed.add('integer');
  return listed;
}

const allTypes = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];

function diffTypes(a: JsonSchema, b: JsonSchema, path: string, emit: Emit) {
  const before = typesOf(a) ?? new Set(allTypes);
  const after = typesOf(b) ?? new Set(allTypes);
  const lost = [...before].filter((t) => !after.has(t));
  const gained = [...after].filter((t) => !before.has(t));
  if (lost.length === 0 && gained.length === 0) return;
  const from = show(a.type ?? 'any');
  const to = show(b.type ?? 'any');
  if (gained.length === 0) emit('type_narrowed', path, `type narrowed from ${from} to ${to}`);
  else if (lost.length === 0) emit('type_widened', path, `type widened from ${from} to ${to}`);
  else emit('type_changed', path, `type changed from ${from} to ${to}`);
}

function diffEnum(a: JsonSchema, b: JsonSchema, path: string, emit: Emit) {
  if (!Array.isArray(a.enum) && !Array.isArray(b.enum)) return;
  if (!Array.isArray(a.enum)) return emit('enum_added', path, `values limited to ${show(b.enum)}`);
  if (!Array.isArray(b.enum)) return emit('enum_removed', path, 'values no longer limited to a list');
  const before = new Set(a.enum.map(show));
  const after = new Set(b.enum.map(show));
  for (const value of before)
    if (!after.has(value)) emit('enum_value_removed', path, `value ${value} no longer allowed`);
  for (const value of after)
    if (!before.has(value)) emit('enum_value_added', path, `value ${value} now allowed`);
}

function diffBounds(a: JsonSchema, b: JsonSchema, path: string, emit: Emit) {
  for (const keyword of [
    ...lowerBounds,
    'maximum',
    'exclusiveMaximum',
    'maxLength',
    'maxItems',
    'maxProperties',
  ]) {
    const before = a[keyword];
    const after = b[keyword];
    if (same(before, after)) continue;
    const lower = lowerBounds.has(keyword);
    const tighter =
      before === undefined ||
      (typeof before === 'number' && typeof after === 'number' && (lower ? after > before : after < before));
    if (after !== undefined && tighter)
      emit('bound_tightened', path, `${keyword} ${show(before)} -> ${show(after)}`);
    else emit('bound_loosened', path, `${keyword} ${show(before)} -> ${show(after)}`);
  }
  const [before, after] = [a.multipleOf, b.multipleOf];
  if (!same(before, after)) {
    // A divisor of the old step accepts everything the old step did.
    const looser =
      after === undefined ||
      (typeof before === 'number' && typeof after === 'number' && (before / after) % 1 === 0);
    emit(looser ? 'bound_loosened' : 'bound_tightened', path, `multipleOf ${show(before)} -> ${show(after)}`);
  }
}

function diffText(keyword: 'pattern' | 'format', a: JsonSchema, b: JsonSchema, path: string, emit: Emit) {
  if (same(a[keyword], b[keyword])) return;
  if (b[keyword] === undefined) emit(`${keyword}_removed`, path, `${keyword} ${show(a[keyword])} removed`);
  else emit(`${keyword}_changed`, path, `${keyword} ${show(a[keyword])} -> ${show(b[keyword])}`);
}

const isClosed = (schema: JsonSchema) => schema.additionalProperties === false;

function diffObject(a: JsonSchema, b: JsonSchema, path: string, emit: Emit) {
  const requiredBefore = new Set(Array.isArray(a.required) ? a.required.map(String) : []);
  const requiredAfter = new Set(Array.isArray(b.required) ? b.required.map(String) : []);
  for (const name of requiredAfter)
    if (!requiredBefore.has(name))
      emit('required_added', `${path}/${escapePointerToken(name)}`, `${name} is now required`);
  for (const name of requiredBefore)
    if (!requiredAfter.has(name))
      emit('required_removed', `${path}/${escapePointerToken(name)}`, `${name} is no longer required`);

  const propsBefore = isRecord(a.properties) ? a.properties : {};
  const propsAfter = isRecord(b.properties) ? b.properties : {};
  for (const name of Object.keys(propsAfter)) {
    const at = `${path}/${escapePointerToken(name)}`;
    if (!Object.prototype.hasOwnProperty.call(propsBefore, name)) {
      // Required or not, a new property constrains only events that send it; requiring it is reported above.
      if (!requiredAfter.has(name) || requiredBefore.has(name)) emit('property_added', at, `${name} added`);
      // A property the old closed schema refused is now accepted.
      if (isClosed(a)) emit('additional_properties_loosened', at, `${name} was unplanned and is now planned`);
    } else diffSchema(propsBefore[name], propsAfter[name], at, emit);
  }
  for (const name of Object.keys(propsBefore))
    if (!Object.prototype.hasOwnProperty.call(propsAfter, name)) {
      const at = `${path}/${escapePointerToken(name)}`;
      if (isClosed(b))
        emit('property_removed_closed', at, `${name} removed: the schema no longer accepts it`);
      else emit('property_removed', at, `${name} removed: it is accepted without constraints`);
    }

  const [before, after] = [a.additionalProperties, b.additionalProperties];
  if (!same(before, after)) {
    if (after === false)
      emit('additional_properties_tightened', `${path}/*`, 'properties not listed are no longer accepted');
    else if (before === false)
      emit('additional_properties_loosened', `${path}/*`, 'properties not listed are now accepted');
    else if (isRecord(before) && isRecord(after)) diffSchema(before, after, `${path}/*`, emit);
    else if (after === undefined || after === true)
      emit(
        'additional_properties_loosened',
        `${path}/*`,
        'properties not listed are accepted without constraints',
      );
    else emit('additional_properties_tightened', `${path}/*`, 'properties not listed are now constrained');
  }
}

/** The changes between two schemas at one place of the event. */
function diffSchema(a: unknown, b: unknown, path: string, emit: Emit) {
  if (same(a, b)) return;
  if (!isRecord(a) || !isRecord(b))
    return emit('schema_changed', path, 'schema changed in a way this diff does not classify');
  const keywords = new Set([...Object.keys(a), ...Object.keys(b)]);
  const other = [...keywords].filter((k) => !understood.has(k) && !annotations.has(k) && !same(a[k], b[k]));
  if (other.length > 0) emit('schema_changed', path, `${other.join(', ')} changed; read as breaking`);
  if ([...keywords].some((k) => annotations.has(k) && !same(a[k], b[k])))
    emit('annotation_changed', path, 'description or other annotation changed');
  diffTypes(a, b, path, emit);
  diffEnum(a, b, path, emit);
  if (!same(a.const, b.const)) {
    if (b.const === undefined) emit('const_removed', path, `no longer fixed to ${show(a.const)}`);
    else emit('const_changed', path, `now fixed to ${show(b.const)}`);
  }
  diffBounds(a, b, path, emit);
  diffText('pattern', a, b, path, emit);
  diffText('format', a, b, path, emit);
  diffObject(a, b, path, emit);
  if (!same(a.items, b.items)) diffSchema(a.items ?? {}, b.items ?? {}, `${path}/*`, emit);
}

const ruleKey = (rule: PlanRule) => canonicalJson([rule.type, rule.name ?? null, ruleVersionOf(rule)]);
const changedRule = (rule: PlanRule): ChangedRule =>
  rule.name === undefined
    ? { type: rule.type, version: ruleVersionOf(rule) }
    : { type: rule.type, name: rule.name, version: ruleVersionOf(rule) };

/**
 * What changed from plan version `a` to `b`, rule by rule (a rule is its type, name and version),
 * each change classified SchemaVer-style. A change this diff cannot prove harmless (a new
 * pattern, anyOf, $ref, ...) is `breaking`: it errs towards asking for a review.
 */
export function diffPlans(a: TrackingPlan, b: TrackingPlan): PlanChange[] {
  const changes: PlanChange[] = [];
  const emitFor =
    (rule: ChangedRule): Emit =>
    (code, path, message) =>
      changes.push({ rule, path, kind: changeKinds[code], change: code, message });
  if (!same(a.common, b.common)) diffSchema(a.common ?? {}, b.common ?? {}, '', emitFor({ type: 'common' }));
  const before = new Map(a.rules.map((r) => [ruleKey(r), r]));
  const after = new Map(b.rules.map((r) => [ruleKey(r), r]));
  for (const [key, rule] of before) {
    const emit = emitFor(changedRule(rule));
    const next = after.get(key);
    if (!next) emit('rule_removed', '', `${describeRule(changedRule(rule))} removed`);
    else {
      if (!same(rule.description, next.description))
        emit('annotation_changed', '', 'rule description changed');
      diffSchema(rule.schema, next.schema, '', emit);
    }
  }
  for (const [key, rule] of after)
    if (!before.has(key))
      emitFor(changedRule(rule))('rule_added', '', `${describeRule(changedRule(rule))} added`);
  return changes;
}
