import { escapePointerToken, pointerOf, pointerTokens } from './json-pointer';
import type { Violation, ViolationCode } from './plan-validator';

/**
 * What a binding's policy decides by: the violation classes of the issue (and of Segment's
 * Schema Configuration), each a set of violation codes. `unknown_pinned_version` is a notice
 * (the event is held to the latest rule instead), never a class: it is flagged and nothing else.
 */
export const violationClasses = [
  'unplanned_event',
  'unplanned_property',
  'missing_required',
  'wrong_value',
  'common_schema',
] as const;
export type ViolationClass = (typeof violationClasses)[number];

/**
 * What happens to an event with a violation of a class. There is no action that discards data:
 * `quarantine` keeps the event out of the tables and the vendors, and it can be replayed.
 */
export const policyActions = ['allow', 'omit', 'quarantine'] as const;
export type PolicyAction = (typeof policyActions)[number];

/**
 * Classes whose violations name a value that can be stripped. An unplanned event and a missing
 * property have none, so `omit` is refused for them (checkPolicy).
 */
export const omittableClasses: readonly ViolationClass[] = [
  'unplanned_property',
  'wrong_value',
  'common_schema',
];

export type PolicyActions = Partial<Record<ViolationClass, PolicyAction>>;

/** The destination name of the account's warehouse in `PlanPolicy.destinations`. */
export const WAREHOUSE_DESTINATION = 'warehouse';

/** A binding's enforcement policy. */
export interface PlanPolicy {
  /** The action per class for every destination; a class left out is `allow`. */
  actions: PolicyActions;
  /**
   * Overrides per destination: an integration id, or `warehouse` for the account's warehouse.
   * A class left out takes `actions`' action.
   */
  destinations?: Record<string, PolicyActions>;
}

/** The class a violation code is decided by; null for a notice that no policy acts on. */
export function classOfViolation(code: ViolationCode): ViolationClass | null {
  switch (code) {
    case 'type_mismatch':
    case 'value_not_allowed':
      return 'wrong_value';
    case 'unknown_pinned_version':
      return null;
    default:
      return code;
  }
}

export interface PolicyProblem {
  /** A JSON Pointer into the policy. */
  path: string;
  message: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function actionsProblems(actions: unknown, path: string): PolicyProblem[] {
  if (!isRecord(actions)) return [{ path, message: 'must be an object of actions by violation class' }];
  const problems: PolicyProblem[] = [];
  for (const [violationClass, action] of Object.entries(actions)) {
    const at = `${path}/${escapePointerToken(violationClass)}`;
    if (!(violationClasses as readonly string[]).includes(violationClass))
      problems.push({ path: at, message: `is not a violation class (${violationClasses.join(', ')})` });
    else if (!(policyActions as readonly unknown[]).includes(action))
      problems.push({ path: at, message: `must be one of ${policyActions.join(', ')}` });
    else if (action === 'omit' && !omittableClasses.includes(violationClass as ViolationClass))
      problems.push({ path: at, message: `omit strips a value, and ${violationClass} names none` });
  }
  return problems;
}

/** Limits on a policy: it travels in every outbox record of its write key. */
export const policyCaps = {
  /** Destinations with overrides. */
  maxDestinations: 100,
  /** Characters of a destination name. */
  maxDestinationLength: 64,
} as const;

const destinationNamePattern = new RegExp(`^[A-Za-z0-9_.:-]{1,${policyCaps.maxDestinationLength}}$`);

/** What is wrong with a submitted policy; none when it can be bound. */
export function checkPolicy(policy: unknown): PolicyProblem[] {
  if (!isRecord(policy)) return [{ path: '', message: 'must be an object' }];
  const problems: PolicyProblem[] = [];
  for (const key of Object.keys(policy))
    if (key !== 'actions' && key !== 'destinations')
      problems.push({
        path: `/${escapePointerToken(key)}`,
        message: 'is not a policy field',
      });
  problems.push(...actionsProblems(policy.actions, '/actions'));
  if (policy.destinations !== undefined) {
    if (!isRecord(policy.destinations))
      problems.push({ path: '/destinations', message: 'must be an object of actions by destination' });
    else {
      const names = Object.keys(policy.destinations);
      if (names.length > policyCaps.maxDestinations)
        problems.push({
          path: '/destinations',
          message: `at most ${policyCaps.maxDestinations} destinations`,
        });
      for (const name of names) {
        const at = `/destinations/${escapePointerToken(name)}`;
        // Integration ids are UUIDs and the warehouse is `warehouse`; anything else names nothing,
        // and a NUL or a lone surrogate would not even be stored (PostgreSQL's jsonb refuses them).
        if (!destinationNamePattern.test(name))
          problems.push({
            path: at,
            message: `a destination is an integration id or warehouse: 1 to ${policyCaps.maxDestinationLength} of A-Z a-z 0-9 _ - . :`,
          });
        problems.push(...actionsProblems(policy.destinations[name], at));
      }
    }
  }
  return problems;
}

/** What one destination does with one event. */
export interface EventDecision {
  /**
   * `quarantine`: the event is kept out of this destination; `omit`: it goes without the values
   * at `omitted`; `allow`: it goes as it came (its violations flagged).
   */
  action: PolicyAction;
  /** JSON Pointers of the values to strip (only with `omit`), each an object member. */
  omitted: string[];
}

/** The top-level members whose contents `omit` may strip; identity, type and name never. */
const omittableRoots = new Set(['properties', 'traits', 'context']);
/** Members of `context` that are the pipeline's or the client library's own, never stripped. */
const keptContext = new Set(['protocols', 'ruddertyper', 'library', 'consent']);

/**
 * The member `omit` strips for a violation at `path`: the path itself when it names a member of
 * an object under properties, traits or context; the nearest such member above an array element
 * (an offending element takes its array with it: removing one would shift the others'
 * indexes); undefined when nothing may be stripped (the event's own fields, a pinned version).
 */
export function omittablePath(path: string): string | undefined {
  const tokens = pointerTokens(path);
  if (!tokens || !omittableRoots.has(tokens[0] as string)) return undefined;
  if (tokens[0] === 'context' && keptContext.has(tokens[1] as string)) return undefined;
  let end = tokens.length;
  // An array index is all digits ("0", "12"); a member named so is rare and taken as an index,
  // which strips more, never less. The root is never one (it is a name above).
  while (/^(0|[1-9][0-9]*)$/.test(tokens[end - 1] as string)) end -= 1;
  return end < 2 ? undefined : pointerOf(tokens.slice(0, end));
}

/**
 * What `destination` does with an event of these violations under `policy`: quarantine when any
 * violation's action is quarantine, or is omit with nothing that may be stripped (a violation is
 * never let through unstripped under omit); else omit when something is stripped; else allow.
 */
/** The action `destination` takes on a violation of `violationClass` under `policy`: its override, else the policy's, else allow. */
export const actionFor = (
  policy: PlanPolicy,
  violationClass: ViolationClass,
  destination: string,
): PolicyAction =>
  policy.destinations?.[destination]?.[violationClass] ?? policy.actions[violationClass] ?? 'allow';

export function decideEvent(
  violations: readonly Violation[],
  policy: PlanPolicy,
  destination: string,
): EventDecision {
  const omitted = new Set<string>();
  for (const violation of violations) {
    const violationClass = classOfViolation(violation.code);
    if (violationClass === null) continue;
    const action = actionFor(policy, violationClass, destination);
    if (action === 'quarantine') return { action: 'quarantine', omitted: [] };
    if (action === 'omit') {
      const path = omittablePath(violation.path);
      if (path === undefined) return { action: 'quarantine', omitted: [] };
      omitted.add(path);
    }
  }
  return omitted.size > 0
    ? { action: 'omit', omitted: [...omitted].sort() }
    : { action: 'allow', omitted: [] };
}

/** An event's check against its plan, as a policy decides on it (libs/events' PlanVerdict). */
export interface DecidedVerdict {
  violations: readonly Violation[];
  /** Violations found and not listed (beyond the door's cap per event). */
  unlisted?: number;
}

/** Whether `destination` lets every violation class through under `policy`. */
const allowsEverything = (policy: PlanPolicy, destination: string): boolean =>
  violationClasses.every((c) => actionFor(policy, c, destination) === 'allow');

/**
 * What `destination` does with an event of this verdict: decideEvent on its listed violations,
 * except that violations found but not listed are of classes not known here, so unless every
 * class is allowed the event is quarantined, never let through with a value its policy would
 * have stripped or kept out.
 */
export function decideVerdict(
  verdict: DecidedVerdict,
  policy: PlanPolicy,
  destination: string,
): EventDecision {
  // Stryker disable next-line ConditionalExpression: decideEvent allows no violations too; this spares the call
  if (verdict.violations.length === 0) return { action: 'allow', omitted: [] };
  const decision = decideEvent(verdict.violations, policy, destination);
  if ((verdict.unlisted ?? 0) > 0 && !allowsEverything(policy, destination))
    return { action: 'quarantine', omitted: [] };
  return decision;
}

/**
 * What a policy does with one event everywhere, as the live debugger shows it: the action of
 * every destination without an override (the policy's own actions), and the action of each
 * destination the policy names an override for.
 */
export interface PlanAction extends EventDecision {
  /** By destination (an integration id, or `warehouse`): present when the policy has overrides. */
  destinations?: Record<string, EventDecision>;
}

export function planActionOf(verdict: DecidedVerdict, policy: PlanPolicy): PlanAction {
  // Decided for a destination no override names: the policy without its overrides.
  const taken: PlanAction = decideVerdict(verdict, { actions: policy.actions }, '');
  const named = Object.keys(policy.destinations ?? {});
  if (named.length === 0) return taken;
  const destinations: Record<string, EventDecision> = {};
  for (const name of named) destinations[name] = decideVerdict(verdict, policy, name);
  return { ...taken, destinations };
}

/**
 * A copy of `event` without the members at `paths` (each from decideEvent); only the objects on
 * a path are copied, the rest is shared. A path whose member is absent changes nothing.
 */
export function omitPaths<T extends Readonly<Record<string, unknown>>>(
  event: T,
  paths: readonly string[],
): T {
  let root: Record<string, unknown> = event;
  let copied = false;
  for (const path of paths) {
    const tokens = pointerTokens(path);
    if (!tokens || tokens.length === 0) continue;
    if (!copied) {
      root = { ...root };
      copied = true;
    }
    let parent: Record<string, unknown> = root;
    let ok = true;
    for (const token of tokens.slice(0, -1)) {
      const child = Object.prototype.hasOwnProperty.call(parent, token) ? parent[token] : undefined;
      if (!isRecord(child)) {
        ok = false;
        break;
      }
      // A second path through the same object copies the copy: still correct, and paths are few.
      const copy = { ...child };
      parent[token] = copy;
      parent = copy;
    }
    const last = tokens[tokens.length - 1] as string;
    if (ok && Object.prototype.hasOwnProperty.call(parent, last)) Reflect.deleteProperty(parent, last);
  }
  return root as T;
}
