import type { EventContext, TrackingEvent } from '@pipeline/events';
import { repairContent } from './event-content';
import { limits, type Properties } from './library';

/** One API call, its arguments as the site passed them: nothing is trusted yet. */
export type Call =
  | { type: 'track'; event: unknown; properties?: unknown }
  | { type: 'page'; name?: unknown; category?: unknown; properties?: unknown }
  | { type: 'identify'; userId: unknown; traits?: unknown }
  | { type: 'group'; groupId: unknown; traits?: unknown }
  | { type: 'alias'; userId: unknown; previousId: unknown };

/** What the SDK adds to every event of a call. */
export interface Envelope {
  messageId: string;
  timestamp: string;
  anonymousId: string;
  userId: string | null;
  sessionId: string;
  context: EventContext;
}

export type Built = { ok: true; event: TrackingEvent } | { ok: false; error: string };

// The consent stamped at send time and JSON escaping can add a little; this keeps a built event
// from passing here and then failing the server's limit.
const SIZE_HEADROOM = 512;

class CallError extends Error {}

/** Ids may be given as numbers, as Segment allows; they travel as strings. */
function idOf(value: unknown, name: string): string {
  const id = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
  if (typeof id !== 'string' || !id) throw new CallError(`${name} must be a non-empty string`);
  if (id.length > limits.maxIdLength)
    throw new CallError(`${name} must have at most ${limits.maxIdLength} characters`);
  return id;
}

function objectOf(value: unknown, name: string): Properties | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw new CallError(`${name} must be an object`);
  return value as Properties;
}

function nameOf(value: unknown, name: string, required: boolean): string | undefined {
  if (!required && (value === undefined || value === null)) return undefined;
  if (typeof value !== 'string' || (required && !value))
    throw new CallError(`${name} must be a non-empty string`);
  if (value.length > limits.maxEventNameLength)
    throw new CallError(`${name} must have at most ${limits.maxEventNameLength} characters`);
  return value;
}

function fieldsOf(call: Call, context: EventContext): Record<string, unknown> {
  switch (call.type) {
    case 'track':
      return {
        event: nameOf(call.event, 'event', true),
        properties: objectOf(call.properties, 'properties') ?? {},
      };
    case 'page': {
      const name = nameOf(call.name, 'name', false);
      const category = nameOf(call.category, 'category', false);
      // Segment's page properties: the page itself, overridable by the caller.
      const { url, path, title, referrer, search } = (context.page ?? {}) as Record<string, unknown>;
      const properties = { url, path, title, referrer, search, name, category };
      return {
        name: category && name ? `${category} ${name}` : name,
        properties: { ...properties, ...objectOf(call.properties, 'properties') },
      };
    }
    case 'identify':
      return { userId: idOf(call.userId, 'userId'), traits: objectOf(call.traits, 'traits') ?? {} };
    case 'group':
      return { groupId: idOf(call.groupId, 'groupId'), traits: objectOf(call.traits, 'traits') ?? {} };
    case 'alias':
      return { userId: idOf(call.userId, 'userId'), previousId: idOf(call.previousId, 'previousId') };
  }
}

/**
 * Builds the event of one call (docs/sdk.md#what-every-event-carries), or says why the call is unusable: a misused call is
 * reported at once to the developer instead of being queued, sent and refused by the server.
 * The result is a JSON copy, so the site changing an object after the call changes nothing.
 */
export function buildEvent(call: Call, envelope: Envelope): Built {
  try {
    const { userId, ...rest } = envelope;
    const event = {
      type: call.type,
      ...rest,
      ...(userId ? { userId } : {}),
      ...fieldsOf(call, envelope.context),
    };
    const json = JSON.stringify(event);
    const bytes = new TextEncoder().encode(json).length;
    if (bytes > limits.maxEventBytes - SIZE_HEADROOM) {
      return {
        ok: false,
        error: `the ${call.type} event is ${bytes} bytes; at most ${limits.maxEventBytes - SIZE_HEADROOM} can be sent`,
      };
    }
    return { ok: true, event: repairContent(JSON.parse(json) as TrackingEvent) };
  } catch (error) {
    if (error instanceof CallError) return { ok: false, error: `${call.type}: ${error.message}` };
    if (error instanceof RangeError && /levels deep/.test(error.message))
      return { ok: false, error: `${call.type}: ${error.message}` };
    return {
      ok: false,
      error: `${call.type}: the arguments cannot be serialized as JSON (${String(error)})`,
    };
  }
}
