import { parseAllDocuments } from 'yaml';
import type { JsonSchema, PlanRule, RuleType, TrackingPlan } from '../plan-document';
import { isRecord, type FormatProblem, type FormatResult } from './format-problem';

// Rudder CLI's data catalog project (spec version rudder/0.1): `kind: events` and
// `kind: properties` files define the catalog, a `kind: tp` file its tracking plan, whose
// rules refer to them as `#/events/<group>/<id>` and `#/properties/<group>/<id>` (the group is
// the defining file's metadata.name).

interface Located {
  value: Record<string, unknown>;
  path: string;
}

const typeOf: Readonly<Record<string, RuleType>> = {
  track: 'track',
  identify: 'identify',
  group: 'group',
  page: 'page',
  screen: 'screen',
};
/** Where each event type keeps what its rule's properties constrain. */
const holder: Readonly<Record<RuleType, string>> = {
  track: 'properties',
  identify: 'traits',
  group: 'traits',
  page: 'properties',
  screen: 'properties',
  alias: 'properties',
};
const jsonTypes = new Set(['string', 'integer', 'number', 'boolean', 'object', 'array', 'null']);
/** Validation keywords of a property's `config` (older projects: `propConfig`), as JSON Schema names them. */
const configKeywords = new Set([
  'enum',
  'minLength',
  'maxLength',
  'pattern',
  'format',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minItems',
  'maxItems',
  'uniqueItems',
]);
const specVersions = new Set(['rudder/0.1', 'rudder/v0.1']);

/** `#/events/group/id` or `#events/group/id` as [kind, group, id]. */
function refParts(ref: unknown): [string, string, string] | undefined {
  if (typeof ref !== 'string') return undefined;
  const parts = ref.replace(/^#\/?/, '').split('/');
  return parts.length === 3 && ref.startsWith('#') ? (parts as [string, string, string]) : undefined;
}

/**
 * A plan from a Rudder CLI project's YAML files (each file's text; a file may hold several
 * documents). Exactly one `kind: tp`; events and properties resolved through the catalog.
 * Refuses, naming each: include_rules, variants, custom types, config keywords without a JSON
 * Schema equivalent, rudder/v1 specs, and references to nothing. A rule without
 * `allow_unplanned` allows unplanned properties, as JSON Schema does by default.
 */
export function importRudderCliProject(files: readonly string[]): FormatResult<TrackingPlan> {
  const problems: FormatProblem[] = [];
  const problem = (code: FormatProblem['code'], path: string, message: string) =>
    problems.push({ code, path, message });
  const events = new Map<string, Located>();
  const properties = new Map<string, Located>();
  const plans: Located[] = [];

  files.forEach((text, fileIndex) => {
    parseAllDocuments(text).forEach((doc, docIndex) => {
      const at = `/${fileIndex}/${docIndex}`;
      if (doc.errors.length > 0)
        return problem('invalid_input', at, `not YAML: ${doc.errors[0]?.message ?? ''}`);
      const spec = doc.toJS() as unknown;
      if (!isRecord(spec) || !isRecord(spec.spec) || typeof spec.kind !== 'string')
        return problem('invalid_input', at, 'a Rudder CLI spec has version, kind, metadata and spec');
      if (!specVersions.has(String(spec.version)))
        return problem(
          'not_mappable',
          `${at}/version`,
          `spec version ${JSON.stringify(spec.version)}: only rudder/0.1 projects are read`,
        );
      const group = isRecord(spec.metadata) ? String(spec.metadata.name) : '';
      const collect = (list: unknown, into: Map<string, Located>, name: string) => {
        if (!Array.isArray(list))
          return problem('invalid_input', `${at}/spec/${name}`, `spec.${name} must be a list`);
        list.forEach((item: unknown, i) => {
          if (isRecord(item) && typeof item.id === 'string')
            into.set(`${group}/${item.id}`, { value: item, path: `${at}/spec/${name}/${i}` });
          else problem('invalid_input', `${at}/spec/${name}/${i}`, `each of spec.${name} has an id`);
        });
      };
      if (spec.kind === 'events') collect(spec.spec.events, events, 'events');
      else if (spec.kind === 'properties') collect(spec.spec.properties, properties, 'properties');
      else if (spec.kind === 'tp') plans.push({ value: spec.spec, path: `${at}/spec` });
      else if (spec.kind !== 'categories')
        problem(
          'not_mappable',
          `${at}/kind`,
          `kind ${JSON.stringify(spec.kind)} is not read (events, properties, tp)`,
        );
    });
  });
  if (plans.length !== 1) {
    problem('invalid_input', '', `a project holds one tracking plan (kind: tp); ${plans.length} found`);
    return { ok: false, problems };
  }
  const [tp] = plans as [Located];

  const lookup = (ref: unknown, kind: 'events' | 'properties', into: Map<string, Located>, at: string) => {
    const parts = refParts(ref);
    const found = parts && parts[0] === kind ? into.get(`${parts[1]}/${parts[2]}`) : undefined;
    if (!found)
      problem(
        'invalid_input',
        at,
        `$ref ${JSON.stringify(ref)} names no ${kind.slice(0, -1)} of the project`,
      );
    return found;
  };

  /** The schema of a rule's property list: each property by its name, required ones listed. */
  const objectOf = (list: unknown, at: string): JsonSchema => {
    const schema: JsonSchema = { type: 'object', properties: {} };
    const required: string[] = [];
    if (list === undefined) return schema;
    if (!Array.isArray(list)) {
      problem('invalid_input', at, 'properties must be a list');
      return schema;
    }
    list.forEach((entry: unknown, i) => {
      const entryAt = `${at}/${i}`;
      if (!isRecord(entry)) return problem('invalid_input', entryAt, 'a property entry has a $ref');
      const found = lookup(entry.$ref, 'properties', properties, `${entryAt}/$ref`);
      if (!found) return;
      const property = found.value;
      const name = property.name ?? property.display_name;
      if (typeof name !== 'string' || name === '')
        return problem('invalid_input', found.path, 'a property has a name (or display_name)');
      const own = propertySchema(property, found.path);
      if (entry.properties !== undefined)
        Object.assign(own, objectOf(entry.properties, `${entryAt}/properties`));
      Object.defineProperty(schema.properties, name, {
        value: own,
        enumerable: true,
        writable: true,
        configurable: true,
      });
      if (entry.required === true) required.push(name);
    });
    if (required.length > 0) schema.required = required;
    return schema;
  };

  const propertySchema = (property: Record<string, unknown>, at: string): JsonSchema => {
    const schema: JsonSchema = {};
    const declared = property.types ?? property.type;
    const types = Array.isArray(declared)
      ? declared.map(String)
      : typeof declared === 'string'
        ? declared.split(',').map((t) => t.trim())
        : [];
    const unknown = types.filter((t) => !jsonTypes.has(t));
    if (unknown.length > 0)
      problem('not_mappable', `${at}/type`, `type ${unknown.join(', ')}: custom types are not mapped`);
    else if (types.length === 1) schema.type = types[0];
    else if (types.length > 1) schema.type = types;
    if (typeof property.description === 'string') schema.description = property.description;
    const config = property.config ?? property.propConfig;
    const configAt = `${at}/${property.config === undefined ? 'propConfig' : 'config'}`;
    if (config === undefined) return schema;
    if (!isRecord(config)) {
      problem('invalid_input', configAt, 'config must be a mapping');
      return schema;
    }
    for (const [keyword, value] of Object.entries(config)) {
      if (configKeywords.has(keyword)) schema[keyword] = value;
      else if (keyword === 'itemTypes' || keyword === 'item_types') {
        const items = Array.isArray(value) ? value.map(String) : [];
        if (items.length === 0 || items.some((t) => !jsonTypes.has(t)))
          problem('not_mappable', `${configAt}/${keyword}`, `${keyword} must list JSON types`);
        else schema.items = { type: items.length === 1 ? items[0] : items };
      } else
        problem('not_mappable', `${configAt}/${keyword}`, `config ${keyword} has no equivalent in a plan`);
    }
    return schema;
  };

  const plan: TrackingPlan = { rules: [] };
  const rules = tp.value.rules;
  if (!Array.isArray(rules)) problem('invalid_input', `${tp.path}/rules`, 'rules must be a list');
  else
    rules.forEach((rule: unknown, i) => {
      const at = `${tp.path}/rules/${i}`;
      if (!isRecord(rule) || rule.type !== 'event_rule')
        return problem(
          'not_mappable',
          `${at}/type`,
          `rule type ${JSON.stringify(isRecord(rule) ? rule.type : rule)} is not mapped (event_rule only)`,
        );
      if (rule.variants !== undefined)
        problem('not_mappable', `${at}/variants`, 'variants (discriminator cases) are not mapped');
      const eventRef = isRecord(rule.event) ? rule.event.$ref : rule.event;
      const found = lookup(eventRef, 'events', events, `${at}/event`);
      if (!found) return;
      const event = found.value;
      const type = typeOf[String(event.event_type)];
      if (!type)
        return problem(
          'not_mappable',
          `${found.path}/event_type`,
          `event_type ${JSON.stringify(event.event_type)} is not mapped`,
        );
      const allow = rule.allow_unplanned ?? (isRecord(rule.event) ? rule.event.allow_unplanned : undefined);
      if (allow !== undefined && typeof allow !== 'boolean')
        return problem('invalid_input', `${at}/allow_unplanned`, 'allow_unplanned is true or false');
      const inner = objectOf(rule.properties, `${at}/properties`);
      if (allow === false) inner.additionalProperties = false;
      const key = holder[type];
      const schema: JsonSchema = { type: 'object', properties: { [key]: inner } };
      // Required properties inside an absent object would be met by nothing being sent.
      if (Array.isArray(inner.required)) schema.required = [key];
      const mapped: PlanRule = { type, schema };
      const name = event.name ?? event.display_name;
      if (type === 'track') {
        if (typeof name !== 'string' || name === '')
          return problem('invalid_input', found.path, 'a track event has a name');
        mapped.name = name;
      }
      if (typeof event.description === 'string') mapped.description = event.description;
      plan.rules.push(mapped);
    });
  return problems.length > 0 ? { ok: false, problems } : { ok: true, value: plan };
}
