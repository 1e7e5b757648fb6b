import { createHash } from 'node:crypto';
import {
  checkEventContent,
  maxEventDepth,
  parseEventTime,
  parseJsonText,
  type EventType,
} from '@pipeline/events';
import type { CollectRequest } from '../collect/collect-request';
import { ingestionErrors } from '../collect/ingestion-errors';
import { MAX_BODY_BYTES } from '../http/request-body';

/** Segment's limit on a request to its tracking API (docs/coming-from-segment.md). */
export const SEGMENT_MAX_BODY_BYTES = 500 * 1024;

/**
 * Messages per request on Segment's routes (docs/coming-from-segment.md, "Limits"). No library
 * comes near it: their batches stop at 10 to 250 messages and at 450-500 KB, and the smallest
 * message one sends (type, a UUID messageId, a timestamp, context.library) is about 190
 * bytes, so even a 475 KB batch of those holds fewer than 2,500. A body of empty messages
 * could otherwise hold 250,000 of them, each one a validation and an error in the answer.
 */
export const SEGMENT_MAX_MESSAGES = 2_500;

/**
 * What a batch may weigh once its `context` and `integrations` are merged into each message:
 * no more than the largest /collect body, so a Segment request never costs validation and
 * the outbox more than /collect's own limit does. Without it a 500 KB body of a 20,000-key
 * context and 90,000 empty messages expands to 10^9 keys.
 */
export const SEGMENT_MAX_MERGED_BYTES = MAX_BODY_BYTES;

/**
 * The routes of Segment's HTTP Tracking API, and the one-letter ones its browser library
 * (analytics-next) posts to: a batch, or one event whose type the route names.
 */
const routes: Readonly<Record<string, EventType | 'batch'>> = {
  batch: 'batch',
  b: 'batch',
  import: 'batch',
  track: 'track',
  t: 'track',
  identify: 'identify',
  i: 'identify',
  page: 'page',
  p: 'page',
  screen: 'screen',
  s: 'screen',
  group: 'group',
  g: 'group',
  alias: 'alias',
  a: 'alias',
};

/** The route of a request to `/v1/<name>`, or undefined when it is not one of Segment's. */
export function segmentRouteOf(
  method: string | undefined,
  url: string | undefined,
): EventType | 'batch' | undefined {
  if (method !== 'POST' || !url?.startsWith('/v1/')) return undefined;
  const end = url.indexOf('?');
  const name = url.slice(4, end === -1 ? undefined : end).replace(/\/$/, '');
  return Object.hasOwn(routes, name) ? routes[name] : undefined;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * A messageId for a message that came without one: a UUID derived from the message itself,
 * so a library that retries the same message gets the same id (and the warehouse one row).
 */
export function derivedMessageId(message: Record<string, unknown>): string {
  const hex = createHash('sha256').update(JSON.stringify(message)).digest('hex');
  // RFC 9562 version 8 (custom), variant 10.
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${((parseInt(hex[16] ?? '0', 16) & 3) | 8).toString(16)}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

interface SharedFields {
  context?: Record<string, unknown>;
  integrations?: Record<string, unknown>;
}

/**
 * Segment's semantics on one message: the route's type, a messageId when it has none, and a
 * timestamp when it has none (its originalTimestamp, else the receipt time). Batch-level
 * `context` and `integrations` apply to every message, the message's own keys winning.
 * Anything else is left for validation, which reports it by index.
 */
function completeSegmentMessage(
  input: unknown,
  type: EventType | undefined,
  batch: SharedFields,
  receivedAt: Date,
): void {
  if (!isObject(input)) return;
  // The message was parsed from this request's body and is ours: it is completed in place,
  // which keeps this route as cheap as /collect (tools/bench/collect-load.js).
  const message = input;
  // A message nested too deep keeps no id: JSON.stringify would overflow the stack on it, and
  // validation refuses it by its index anyway.
  if (
    (message.messageId === undefined || message.messageId === null || message.messageId === '') &&
    checkEventContent(message).ok
  )
    message.messageId = derivedMessageId(message);
  if (type) message.type = type;
  if (batch.context)
    message.context = { ...batch.context, ...(isObject(message.context) ? message.context : {}) };
  if (batch.integrations)
    message.integrations = {
      ...batch.integrations,
      ...(isObject(message.integrations) ? message.integrations : {}),
    };
  if (message.timestamp === undefined || message.timestamp === null) {
    message.timestamp =
      parseEventTime(message.originalTimestamp) !== undefined
        ? message.originalTimestamp
        : receivedAt.toISOString();
  }
}

/**
 * The JSON size of the batch-level fields merged into every message, or the field nested too
 * deep to be measured (JSON.stringify overflows the stack at a few thousand levels; no event
 * may be nested past maxEventDepth anyway).
 */
function sharedBytes(shared: SharedFields): { bytes: number } | { tooDeep: string } {
  let bytes = 0;
  for (const name of ['context', 'integrations'] as const) {
    const value = shared[name];
    if (value === undefined) continue;
    const content = checkEventContent(value);
    if (!content.ok) return { tooDeep: `${name}.${content.path}` };
    bytes += Buffer.byteLength(JSON.stringify(value));
  }
  return { bytes };
}

/**
 * Parses a body of Segment's tracking API into the request /collect's pipeline handles, in
 * Segment's dialect (userId alone is enough; `screen` is a type).
 */
export function parseSegmentBody(
  raw: Buffer | undefined,
  route: EventType | 'batch',
  receivedAt: Date,
): CollectRequest {
  if (!raw || raw.length === 0) throw ingestionErrors.invalidPayload('body is missing');
  let body: unknown;
  try {
    body = parseJsonText(raw.toString('utf8'));
  } catch {
    throw ingestionErrors.invalidPayload('body is not valid JSON');
  }
  if (!isObject(body)) throw ingestionErrors.invalidPayload('body must be a JSON object');
  const problems: string[] = [];
  if (body.writeKey !== undefined && typeof body.writeKey !== 'string')
    problems.push('writeKey must be a string');
  if (
    route === 'batch' &&
    body.sentAt !== undefined &&
    body.sentAt !== null &&
    parseEventTime(body.sentAt) === undefined
  )
    problems.push(
      'sentAt must be an ISO 8601 date-time with a time zone, on a date that exists, in the years 0001-9999',
    );
  let messages: unknown[] = [body];
  const shared: SharedFields = {};
  if (route === 'batch') {
    if (!Array.isArray(body.batch)) problems.push('batch must be an array of messages');
    else if (body.batch.length === 0) problems.push('batch must hold at least one message');
    else messages = body.batch;
    if (isObject(body.context)) shared.context = body.context;
    if (isObject(body.integrations)) shared.integrations = body.integrations;
  }
  if (problems.length > 0) throw ingestionErrors.invalidBatch(problems);
  // Sizes first, the key next (CollectService.validate), and only then any work per message.
  if (messages.length > SEGMENT_MAX_MESSAGES)
    throw ingestionErrors.batchTooLarge(messages.length, SEGMENT_MAX_MESSAGES);
  const merged = sharedBytes(shared);
  if ('tooDeep' in merged)
    throw ingestionErrors.invalidBatch([
      `${merged.tooDeep} is nested more than ${maxEventDepth} levels deep`,
    ]);
  // An upper bound: every message's own bytes are within the body, and each gets the shared ones.
  const mergedBytes = raw.length + messages.length * merged.bytes;
  // Without shared fields it is the body's size, far below the bound.
  if (mergedBytes > SEGMENT_MAX_MERGED_BYTES)
    throw ingestionErrors.mergedBatchTooLarge(messages.length, merged.bytes, SEGMENT_MAX_MERGED_BYTES);
  const type = route === 'batch' ? undefined : route;
  return {
    events: messages,
    completeEvents: () => {
      for (const message of messages) completeSegmentMessage(message, type, shared, receivedAt);
    },
    // The merged bound, not the body's size: validation and the outbox's split into records take
    // it as an upper bound on what the events weigh, and merging makes them weigh more.
    bodyBytes: mergedBytes,
    dialect: 'segment',
    // A writeKey that is not a string was refused above.
    ...(body.writeKey ? { bodyWriteKey: body.writeKey as string } : {}),
    ...(route === 'batch' && typeof body.sentAt === 'string' ? { batchSentAt: body.sentAt } : {}),
  };
}
