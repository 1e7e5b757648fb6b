import Ajv, { type ErrorObject } from 'ajv';
import { checkEventContent, maxEventDepth } from './event-content';
import { eventLimits, eventTypes, trackingEventSchema, type TrackingEvent } from './event-schema';
import { parseEventTime } from './event-time';

export interface EventError {
  message: string;
}

export type EventValidation = { valid: true; event: TrackingEvent } | { valid: false; errors: EventError[] };

// Compiled once, at module load: validation is on every request's hot path.
const ajv = new Ajv({ allErrors: true, discriminator: true, strict: false });
ajv.addFormat('event-time', {
  type: 'string',
  validate: (text: string) => parseEventTime(text) !== undefined,
});
const validate = ajv.compile<TrackingEvent>(trackingEventSchema);

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
export function validateEvent(input: unknown, sourceBytes = Infinity): EventValidation {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return { valid: false, errors: [{ message: 'event must be an object' }] };
  }
  const type = (input as { type?: unknown }).type;
  if (typeof type !== 'string' || !(eventTypes as readonly string[]).includes(type)) {
    return { valid: false, errors: [{ message: `type must be one of ${eventTypes.join(', ')}` }] };
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
  if (validate(event)) return { valid: true, event };
  const messages = [...new Set((validate.errors ?? []).map(describe))];
  return { valid: false, errors: messages.map((message) => ({ message })) };
}
