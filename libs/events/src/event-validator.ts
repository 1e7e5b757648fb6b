import Ajv, { type ErrorObject } from 'ajv';
import addFormats from 'ajv-formats';
import { eventLimits, eventTypes, trackingEventSchema, type TrackingEvent } from './event-schema';

export interface EventError {
  message: string;
}

export type EventValidation = { valid: true; event: TrackingEvent } | { valid: false; errors: EventError[] };

// Compiled once, at module load: validation is on every request's hot path.
const ajv = new Ajv({ allErrors: true, discriminator: true, strict: false });
addFormats(ajv, ['date-time']);
const validate = ajv.compile<TrackingEvent>(trackingEventSchema);

function describe(error: ErrorObject): string {
  const where = error.instancePath ? error.instancePath.slice(1).replace(/\//g, '.') : 'event';
  if (error.keyword === 'required')
    return `${where === 'event' ? '' : `${where}.`}${String(error.params.missingProperty)} is required`;
  if (error.keyword === 'format')
    return `${where} must be an ISO 8601 date-time with a time zone (e.g. 2026-01-31T12:00:00.000Z)`;
  if (error.keyword === 'maxLength')
    return `${where} must have at most ${String(error.params.limit)} characters`;
  if (error.keyword === 'minLength') return `${where} must not be empty`;
  return `${where} ${error.message ?? 'is invalid'}`;
}

/**
 * Validates one event of a request: its type, its conditionally required fields, and the limits.
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
  const size =
    sourceBytes <= eventLimits.maxEventBytes / 2 ? 0 : Buffer.byteLength(JSON.stringify(input), 'utf8');
  if (size > eventLimits.maxEventBytes) {
    return {
      valid: false,
      errors: [{ message: `event is ${size} bytes; at most ${eventLimits.maxEventBytes} are accepted` }],
    };
  }
  if (validate(input)) return { valid: true, event: input };
  const messages = [...new Set((validate.errors ?? []).map(describe))];
  return { valid: false, errors: messages.map((message) => ({ message })) };
}
