import type { IncomingHttpHeaders } from 'node:http';
import { eventLimits, parseEventTime, parseJsonText, type EventDialect } from '@pipeline/events';
import { ingestionErrors } from './ingestion-errors';

export interface CollectRequest {
  /** The raw events, validated one by one later (partial success). */
  events: unknown[];
  /**
   * Work on each event that the route defers until the request's size and key are checked
   * (Segment's completion of each message, in place); run once, before validation.
   */
  completeEvents?: () => void;
  /** The batch's (or single event's) body write key. */
  bodyWriteKey?: string;
  batchSentAt?: string;
  /**
   * An upper bound on what the events weigh together, as JSON: the body's size, or more when
   * the route adds to each event (see validateEvent and toOutboxEnvelopes).
   */
  bodyBytes: number;
  /** The contract the events came under; /collect's when absent. */
  dialect?: EventDialect;
}

/**
 * Parses a /collect body: a single event object, or `{ writeKey?, sentAt?, batch }`. Any
 * content type is read as JSON: sendBeacon sends text/plain.
 */
export function parseCollectBody(raw: Buffer | undefined): CollectRequest {
  if (!raw || raw.length === 0) throw ingestionErrors.invalidPayload('body is missing');
  let body: unknown;
  try {
    body = parseJsonText(raw.toString('utf8'));
  } catch {
    throw ingestionErrors.invalidPayload('body is not valid JSON');
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw ingestionErrors.invalidPayload('body must be a JSON object');
  }
  const object = body as Record<string, unknown>;
  if (!('batch' in object)) {
    const writeKey = typeof object.writeKey === 'string' ? object.writeKey : undefined;
    return { events: [object], bodyBytes: raw.length, ...(writeKey ? { bodyWriteKey: writeKey } : {}) };
  }
  const problems: string[] = [];
  if (!Array.isArray(object.batch)) problems.push('batch must be an array of events');
  else if (object.batch.length === 0) problems.push('batch must hold at least one event');
  if (object.writeKey !== undefined && typeof object.writeKey !== 'string')
    problems.push('writeKey must be a string');
  // Parsed, not pattern-matched: the consumers read it for every event without a sentAt.
  if (object.sentAt !== undefined && parseEventTime(object.sentAt) === undefined) {
    problems.push(
      'sentAt must be an ISO 8601 date-time with a time zone, on a date that exists, in the years 0001-9999',
    );
  }
  if (problems.length > 0) throw ingestionErrors.invalidBatch(problems);
  const batch = object.batch as unknown[];
  if (batch.length > eventLimits.maxBatchSize)
    throw ingestionErrors.batchTooLarge(batch.length, eventLimits.maxBatchSize);
  return {
    events: batch,
    bodyBytes: raw.length,
    ...(typeof object.writeKey === 'string' && object.writeKey ? { bodyWriteKey: object.writeKey } : {}),
    ...(typeof object.sentAt === 'string' ? { batchSentAt: object.sentAt } : {}),
  };
}

/**
 * Write key locations in the spec's order: X-Write-Key, then Authorization: Bearer (or Basic
 * with the key as user name, as Segment's libraries send it), then the body.
 */
export function findWriteKey(
  headers: IncomingHttpHeaders,
  bodyWriteKey: string | undefined,
): string | undefined {
  const header = headers['x-write-key'];
  const fromHeader = (Array.isArray(header) ? header[0] : header)?.trim();
  if (fromHeader) return fromHeader;
  const authorization = headers.authorization ?? '';
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(authorization)?.[1];
  if (bearer) return bearer;
  const basic = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(authorization)?.[1];
  if (basic) {
    const user = Buffer.from(basic, 'base64').toString('utf8').split(':')[0]?.trim();
    if (user) return user;
  }
  return bodyWriteKey?.trim() || undefined;
}
