import Ajv, { type ErrorObject } from 'ajv';
import { checkEventContent, maxEventDepth } from './event-content';
import {
  collectEventTypes,
  eventLimits,
  eventTypes,
  trackingEventSchema,
  type TrackingEvent,
} from './event-schema';
import { parseEventTime } from './event-time';

export interface EventError {
  message: string;
}

export type EventValidation = { valid: true; event: TrackingEvent } | { valid: false; errors: EventError[] };

/**
 * Which contract an event arrived under: `collect` (docs/tracking-api.md#events: five types, anonymousId always
 * required) or `segment` (Segment's tracking API: `screen` too, and userId or anonymousId).
 */
export type EventDialect = 'collect' | 'segment';

// Compiled once, at module load: validation is on every request's hot path.
const ajv = new Ajv({ allErrors: true, discriminator: true, strict: false });
ajv.addFormat('event-time', {
  type: 'string',
  validate: (text: string) => parseEventTime(text) !== undefined,
});
const validate = ajv.compile<TrackingEvent>(trackingEventSchema);

/** The anyOf that asks for someone (event-schema.ts): one message instead of three. */
function whoMissing(errors: readonly ErrorObject[], dialect: EventDialect): string[] | undefined {
  const someone = errors.find((e) => e.keyword === 'anyOf' && e.instancePath === '');
  if (!someone) return undefined;
  const rest = errors.filter((e) => e !== someone && !e.schemaPath.startsWith(someone.schemaPath));
  const message = dialect === 'collect' ? 'anonymousId is required' : 'userId or anonymousId is required';
  return [message, ...rest.map(describe)];
}

/**
 * A value that fails every branch of a property's anyOf (userId: a string or null) gets one
 * error per branch plus the anyOf's own. Only the branch of the right type says what is wrong
 * ("at most 200 characters"); when no branch has the right type, one message names them all.
 */
function collapseUnions(errors: readonly ErrorObject[]): ErrorObject[] {
  const unions = errors.filter((e) => e.keyword === 'anyOf' && e.instancePath !== '');
  if (unions.length === 0) return [...errors];
  const branchesOf = (union: ErrorObject) =>
    errors.filter((e) => e !== union && e.schemaPath.startsWith(`${union.schemaPath}/`));
  const replaced = new Set<ErrorObject>();
  const collapsed: ErrorObject[] = [];
  for (const union of unions) {
    const branches = branchesOf(union);
    for (const e of [union, ...branches]) replaced.add(e);
    const constraints = branches.filter((e) => e.keyword !== 'type');
    if (constraints.length > 0) collapsed.push(...constraints);
    else {
      const types = branches.map((e) => String(e.params.type));
      collapsed.push({
        ...union,
        keyword: 'type',
        params: { type: types.join(' or ') },
        message: `must be ${types.join(' or ')}`,
      });
    }
  }
  return [...errors.filter((e) => !replaced.has(e)), ...collapsed];
}

function describe(error: ErrorObject): string {
  const where = error.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : 'event';
  if (error.keyword === 'required')
    return `${where === 'event' ? '' : `${where}.`}${String(error.params.missingProperty)} is required`;
  if (error.keyword === 'format')
    return `${where} must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z), on a date that exists, in the years 0001-9999`;
  if (error.keyword === 'maxLength')
    return `${where} must have at most ${String(error.params.limit)} characters`;
  if (error.keyword === 'minLength') return `${where} must not be empty`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

/**
 * Validates one event of a request: its type, its conditionally required fields, and the limits.
 * The event it returns has NUL and unpaired surrogates replaced by U+FFFD (event-content.ts):
 * a copy when anything was replaced, the input itself otherwise.
 * `sourceBytes` is the size of the JSON text the event was parsed from (e.g. the whole body):
 * re-serialized, an event can grow only by a few characters per number (`1e21` -> `1e+21`), so
 * when the source is within half the limit the event cannot exceed it and is not serialized
 * again to be measured.
 */
export function validateEvent(
  input: unknown,
  sourceBytes = Infinity,
  dialect: EventDialect = 'collect',
): EventValidation {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { valid: false, errors: [{ message: 'event must be an object' }] };
  }
  const types = dialect === 'collect' ? collectEventTypes : eventTypes;
  const type = (input as { type?: unknown }).type;
  if (typeof type !== 'string' || !(types as readonly string[]).includes(type)) {
    return { valid: false, errors: [{ message: `type must be one of ${types.join(', ')}` }] };
  }
  // Before measuring: JSON.stringify overflows the stack on a deep enough value.
  const content = checkEventContent(input);
  if (!content.ok) {
    return {
      valid: false,
      errors: [{ message: `${content.path} is nested more than ${maxEventDepth} levels deep` }],
    };
  }
  const event = content.value as Record<string, unknown>;
  const size =
    sourceBytes <= eventLimits.maxEventBytes / 2 ? 0 : Buffer.byteLength(JSON.stringify(event), 'utf8');
  if (size > eventLimits.maxEventBytes) {
    return {
      valid: false,
      errors: [{ message: `event is ${size} bytes; at most ${eventLimits.maxEventBytes} are accepted` }],
    };
  }
  if (validate(event)) {
    if (dialect === 'collect' && typeof event.anonymousId !== 'string')
      return { valid: false, errors: [{ message: 'anonymousId is required' }] };
    return { valid: true, event };
  }
  const errors = collapseUnions(validate.errors ?? []);
  const messages = [...new Set(whoMissing(errors, dialect) ?? errors.map(describe))];
  // identify and alias require a userId, so their schema does not ask for someone; /collect
  // still requires an anonymousId of them.
  if (dialect === 'collect' && typeof event.anonymousId !== 'string')
    messages.push('anonymousId is required');
  return { valid: false, errors: [...new Set(messages)].map((message) => ({ message })) };
}
