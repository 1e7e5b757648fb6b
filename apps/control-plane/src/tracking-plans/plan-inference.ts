import type { ReadOnlyQueries } from '@pipeline/destinations';
import {
  escapePointerToken,
  type JsonSchema,
  type PlanRule,
  type TrackingPlan,
} from '@pipeline/tracking-plans';

// Inference of a draft plan from what the warehouse saw (docs/tracking-plans.md, "Plans from
// traffic"): pure, over the rows of the traffic_names and traffic_profile queries, so that the
// rules are tested without a database and the database does the counting.

export type TrafficName = ReadOnlyQueries['traffic_names']['row'];
export type ProfileRow = ReadOnlyQueries['traffic_profile']['row'];
export type ObservedType = ProfileRow['jsonType'];

/** Bounds on the work and on the draft; each is documented with its reason. */
export const inferenceCaps = {
  /** Distinct (type, name) pairs read per table: the most frequent. */
  maxNames: 200,
  /** Latest rows per name whose members are profiled. */
  rowsPerName: 1_000,
  /** Profile rows (name × member × type) per table. */
  maxProfileRows: 100_000,
  /** Members planned per rule: past it, the most frequent are kept and the rule left open. */
  maxPropertiesPerRule: 200,
  /** Characters of a string value an enum may hold. */
  maxEnumValueLength: 200,
  /** maxEnumValues' upper bound. */
  maxEnumValues: 50,
} as const;

export interface InferenceOptions {
  /** A member is required when present in at least this share of its name's sampled rows. */
  requiredRatio: number;
  /** A string member gets an enum when it shows at most this many distinct values. */
  maxEnumValues: number;
  /** The rows profiled per name (traffic_profile's `perName`). */
  rowsPerName: number;
}

export interface InferredRule {
  type: 'track' | 'page' | 'screen' | 'identify' | 'group';
  /** Absent for identify, group, and a page or screen rule covering pages without a name. */
  name?: string;
  /** Calls seen in the window. */
  observedCount: number;
  /** Latest calls whose members were profiled (at most rowsPerName). */
  sampledCount: number;
  firstSeen: string;
  lastSeen: string;
}

export interface FlaggedProperty {
  type: InferredRule['type'];
  name?: string;
  /** JSON Pointer into the event (RFC 6901: `~0` for `~`, `~1` for `/`). */
  path: string;
  /**
   * `mixed_types`: seen with several JSON types, left untyped; `unplannable_name`: a member
   * named `__proto__`, which the validator cannot name, so its rule stays open;
   * `properties_capped`: the rule had more members than the cap, the rest unplanned and the rule open.
   */
  reason: 'mixed_types' | 'unplannable_name' | 'properties_capped';
  /** Rows per JSON type (integer and number apart, null included). */
  types: Partial<Record<ObservedType, number>>;
}

export interface Inference {
  plan: TrackingPlan;
  rules: InferredRule[];
  flagged: FlaggedProperty[];
}

const ruleTypes = new Set<string>(['track', 'page', 'screen', 'identify', 'group']);

/** Code-unit order: the same in every locale and in the database's COLLATE "C". */
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const keyOf = (type: string, name: string | null) => JSON.stringify([type, name]);

interface Member {
  property: string;
  types: Partial<Record<ObservedType, number>>;
  strings: string[] | null;
  present: number;
}

/** The schema of one member, or undefined when its types are mixed (left untyped, flagged). */
function memberSchema(member: Member, options: InferenceOptions): JsonSchema | undefined {
  const types = { ...member.types };
  const nullSeen = (types.null ?? 0) > 0;
  delete types.null;
  // A number that was sometimes whole is a number: integer is a narrower number, not another type.
  if (types.integer !== undefined && types.number !== undefined) {
    types.number += types.integer;
    delete types.integer;
  }
  const seen = Object.keys(types) as ObservedType[];
  if (seen.length > 1) return undefined;
  if (seen.length === 0) return { type: 'null' };
  const [only] = seen as [ObservedType];
  const schema: JsonSchema = { type: nullSeen ? [only, 'null'] : only };
  const strings = member.strings;
  if (
    only === 'string' &&
    strings !== null &&
    strings.length > 0 &&
    strings.length <= options.maxEnumValues &&
    strings.every((value) => value.length <= inferenceCaps.maxEnumValueLength)
  )
    schema.enum = [...[...strings].sort(byCodeUnits), ...(nullSeen ? [null] : [])];
  return schema;
}

/**
 * The draft and what it was inferred from: one rule per name seen (pages and screens without a
 * name share one rule), each member typed by what it was sent as, required when present in at
 * least `requiredRatio` of the sampled rows, an enum for a string of few values. A member seen
 * with several types is left untyped and flagged: guessing would refuse real traffic.
 */
export function inferPlan(
  names: readonly TrafficName[],
  profile: readonly ProfileRow[],
  options: InferenceOptions,
): Inference {
  const members = new Map<string, Map<string, Member>>();
  for (const row of profile) {
    const key = keyOf(row.type, row.name);
    const byProperty = members.get(key) ?? new Map<string, Member>();
    members.set(key, byProperty);
    const member = byProperty.get(row.property) ?? {
      property: row.property,
      types: {},
      strings: null,
      present: 0,
    };
    member.types[row.jsonType] = (member.types[row.jsonType] ?? 0) + row.count;
    member.present += row.count;
    if (row.jsonType === 'string') member.strings = row.strings;
    byProperty.set(row.property, member);
  }

  const rules: PlanRule[] = [];
  const inferred: InferredRule[] = [];
  const flagged: FlaggedProperty[] = [];
  for (const seen of names) {
    if (!ruleTypes.has(seen.type)) continue;
    const type = seen.type as InferredRule['type'];
    const named = seen.name === null ? {} : { name: seen.name };
    const sampled = Math.min(seen.count, options.rowsPerName);
    const container = type === 'identify' || type === 'group' ? 'traits' : 'properties';
    const all = [...(members.get(keyOf(seen.type, seen.name))?.values() ?? [])].sort(
      (a, b) => b.present - a.present || byCodeUnits(a.property, b.property),
    );
    let open = false;
    const flag = (member: Member, reason: FlaggedProperty['reason']) =>
      flagged.push({
        type,
        ...named,
        path: `/${container}/${escapePointerToken(member.property)}`,
        reason,
        types: member.types,
      });
    const planned: [string, JsonSchema][] = [];
    const required: string[] = [];
    for (const [index, member] of all.entries()) {
      if (member.property === '__proto__') {
        open = true;
        flag(member, 'unplannable_name');
        continue;
      }
      if (index >= inferenceCaps.maxPropertiesPerRule) {
        open = true;
        flag(member, 'properties_capped');
        continue;
      }
      const schema = memberSchema(member, options);
      if (schema === undefined) flag(member, 'mixed_types');
      planned.push([member.property, schema ?? {}]);
      if (member.present >= options.requiredRatio * sampled) required.push(member.property);
    }
    planned.sort(([a], [b]) => byCodeUnits(a, b));
    required.sort(byCodeUnits);
    const inner: JsonSchema = {
      type: 'object',
      // fromEntries defines each member: a property named "constructor" or "toString" is data.
      properties: Object.fromEntries(planned),
      ...(required.length > 0 ? { required } : {}),
      ...(open ? {} : { additionalProperties: false }),
    };
    rules.push({
      type,
      ...named,
      schema: {
        type: 'object',
        ...(required.length > 0 ? { required: [container] } : {}),
        properties: { [container]: inner },
      },
    });
    inferred.push({
      type,
      ...named,
      observedCount: seen.count,
      sampledCount: sampled,
      firstSeen: seen.firstSeen.toISOString(),
      lastSeen: seen.lastSeen.toISOString(),
    });
  }
  return { plan: { rules }, rules: inferred, flagged };
}
