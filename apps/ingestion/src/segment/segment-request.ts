import { createHash } from 'node:crypto';
import { parseEventTime, type EventType } from '@pipeline/events';
import type { CollectRequest } from '../collect/collect-request';
import { ingestionErrors } from '../collect/ingestion-errors';

/** Segment's limit on a request to its tracking API (docs/coming-from-segment.md). */
export const SEGMENT_MAX_BODY_BYTES = 500 * 1024;

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

/**
 * Segment's semantics on one message: the route's type, a messageId when it has none, and a
 * timestamp when it has none (its originalTimestamp, else the receipt time). Batch-level
 * `context` and `integrations` apply to every message, the message's own keys winning.
 * Anything else is left for validation, which reports it by index.
 */
function segmentMessage(
  input: unknown,
  type: EventType | undefined,
  batch: { context?: Record<string, unknown>; integrations?: Record<string, unknown> },
  receivedAt: Date,
): unknown {
  if (!isObject(input)) return input;
  // The message was parsed from this request's body and is ours: it is completed in place,
  // which keeps this route as cheap as /collect (tools/bench/collect-load.js).
  const message = input;
  if (message.messageId === undefined || message.messageId === null || message.messageId === '')
    message.messageId = derivedMessageId(message);
  if (type && message.type !== type) message.type = type;
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
  return message;
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
    body = JSON.parse(raw.toString('utf8'));
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
  const shared: { context?: Record<string, unknown>; integrations?: Record<string, unknown> } = {};
  if (route === 'batch') {
    if (!Array.isArray(body.batch)) problems.push('batch must be an array of messages');
    else if (body.batch.length === 0) problems.push('batch must hold at least one message');
    else messages = body.batch;
    if (isObject(body.context)) shared.context = body.context;
    if (isObject(body.integrations)) shared.integrations = body.integrations;
  }
  if (problems.length > 0) throw ingestionErrors.invalidBatch(problems);
  return {
    events: messages.map((message) =>
      segmentMessage(message, route === 'batch' ? undefined : route, shared, receivedAt),
    ),
    bodyBytes: raw.length,
    dialect: 'segment',
    ...(typeof body.writeKey === 'string' && body.writeKey ? { bodyWriteKey: body.writeKey } : {}),
    ...(route === 'batch' && typeof body.sentAt === 'string' ? { batchSentAt: body.sentAt } : {}),
  };
}
