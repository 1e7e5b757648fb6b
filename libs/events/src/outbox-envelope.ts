import type { ReceiptContext } from './event-normalizer';
import { parseJsonText } from './json-text';
import type { TrackingEvent } from './event-schema';
import type { PlanPolicy, Violation } from '@pipeline/tracking-plans';

/** The tracking plan the door held an envelope's events to, and the policy its binding set. */
export interface EnvelopePlan {
  planId: string;
  /** The binding's version at receipt (the latest published one, or the pinned one). */
  version: number;
  /** What the consumers do with each violation class (docs/tracking-plans.md). */
  policy: PlanPolicy;
}

/** One event's check against the plan, in the same place of `verdicts` as the event in `events`. */
export interface PlanVerdict {
  /**
   * The plan version the event was held to: the binding's, or the one the event pinned
   * (`context.ruddertyper`). null: the plan could not be read, the event was not checked and is
   * flagged `plan_unavailable`, never dropped.
   */
  version: number | null;
  /** Empty: the event keeps to the plan. At most MAX_VIOLATIONS_PER_EVENT, the first found. */
  violations: Violation[];
  /**
   * Violations found beyond MAX_VIOLATIONS_PER_EVENT and not listed (absent when none were):
   * an event with thousands of unplanned properties would otherwise outgrow its record.
   */
  unlisted?: number;
}

/**
 * The violations an event's verdict lists: enough for any event a person wrote against a plan,
 * and bounded so that a 32 KB event's verdict stays far below a record (a violation is at most
 * about 2 KB: a 1,000-character pattern in its message, and its path twice).
 */
export const MAX_VIOLATIONS_PER_EVENT = 100;

/**
 * One Kafka record of the outbox: the accepted events of one request (all of them, or a part
 * when they are large), with what the server knew on receipt. One record per request rather
 * than per event keeps the producer's per-record cost out of the hot path. Consumers normalize
 * each event with normalizeEvent, so every destination sees the same rows.
 */
export interface OutboxEnvelope {
  v: 2;
  accountId: string;
  writeKeyId: string;
  batchId: string;
  /** ISO time the ingestion service received the request. */
  receivedAt: string;
  ip: string | null;
  userAgent: string | null;
  /** The batch's sentAt, for events without their own. */
  batchSentAt?: string;
  events: TrackingEvent[];
  /** Absent: the write key binds no tracking plan. */
  plan?: EnvelopePlan;
  /** With `plan`: one verdict per event, aligned with `events`. */
  verdicts?: PlanVerdict[];
}

/** Records stay far below Kafka's default 1 MB message limit. */
export const MAX_ENVELOPE_BYTES = 512 * 1024;

/**
 * The record key: a browser's batch comes from one visitor, so keying by its first event's
 * anonymous id (its user id when it has none) puts each visitor's events on one partition, in order.
 */
export const outboxKey = (envelope: OutboxEnvelope) => {
  const first = envelope.events[0];
  return `${envelope.accountId}:${first?.anonymousId ?? first?.userId ?? ''}`;
};

/**
 * An upper bound of a verdict's JSON bytes in an envelope (its comma included), without
 * serializing it: a verdict without violations is at most `{"version":2147483647,"violations":[]},`;
 * a violation's strings take at most 6 bytes a UTF-16 unit in JSON (`\u0000`), and its members'
 * names, quotes and numbers under 100 bytes.
 */
function verdictBytes(verdict: PlanVerdict): number {
  let bytes = 60;
  for (const { code, path, keyword, message } of verdict.violations)
    bytes += 100 + 6 * (code.length + path.length + keyword.length + message.length);
  return verdict.violations.length === 0 ? 40 : bytes;
}

/** The JSON bytes of each policy seen, measured once: a write key's requests share its binding's. */
const policyBytes = new WeakMap<PlanPolicy, number>();

/** An upper bound of an envelope plan's JSON bytes: its policy's, and 6 bytes a unit of its id. */
function planBytes(plan: EnvelopePlan): number {
  let bytes = policyBytes.get(plan.policy);
  if (bytes === undefined) {
    bytes = Buffer.byteLength(JSON.stringify(plan.policy), 'utf8');
    policyBytes.set(plan.policy, bytes);
  }
  return bytes + 6 * plan.planId.length + 64;
}

/**
 * Splits a request's events into envelopes of at most MAX_ENVELOPE_BYTES (an event is at most
 * 32 KB). `sourceBytes` is the size of the body the events were parsed from: when it is within
 * half the limit (see validateEvent), they all fit one envelope without measuring each.
 * `verdicts`, aligned with `events` (the plan door's), are split with them, each in its event's
 * envelope, and their bytes counted with the events' by an upper bound (verdictBytes): most
 * verdicts have no violations, and serializing every verdict twice would cost each request.
 */
export function toOutboxEnvelopes(
  base: Omit<OutboxEnvelope, 'events' | 'verdicts'>,
  events: readonly TrackingEvent[],
  sourceBytes = Infinity,
  verdicts?: readonly PlanVerdict[],
): { envelope: OutboxEnvelope; json: string }[] {
  if (verdicts && verdicts.length !== events.length)
    throw new Error(`${verdicts.length} verdicts for ${events.length} events`);
  const envelopeOf = (from: number, to: number): OutboxEnvelope =>
    verdicts
      ? { ...base, events: events.slice(from, to), verdicts: verdicts.slice(from, to) }
      : { ...base, events: events.slice(from, to) };
  // The plan (its policy: up to 100 destinations' actions) is in every envelope of the request.
  const reserved = 1024 + (base.plan ? planBytes(base.plan) : 0);
  let verdictTotal = 0;
  if (verdicts) for (const verdict of verdicts) verdictTotal += verdictBytes(verdict);
  if (sourceBytes + verdictTotal + reserved - 1024 <= MAX_ENVELOPE_BYTES / 2) {
    const envelope = envelopeOf(0, events.length);
    return events.length === 0 ? [] : [{ envelope, json: JSON.stringify(envelope) }];
  }
  const out: { envelope: OutboxEnvelope; json: string }[] = [];
  let start = 0;
  let size = 0;
  const flush = (end: number) => {
    if (end === start) return;
    const envelope = envelopeOf(start, end);
    out.push({ envelope, json: JSON.stringify(envelope) });
    start = end;
    size = 0;
  };
  events.forEach((event, index) => {
    const verdict = verdicts?.[index];
    const bytes =
      Buffer.byteLength(JSON.stringify(event), 'utf8') + (verdict === undefined ? 0 : verdictBytes(verdict));
    if (size + bytes > MAX_ENVELOPE_BYTES - reserved) flush(index);
    size += bytes;
  });
  flush(events.length);
  return out;
}

/** What normalizeEvent needs from a record's receipt facts. */
export function receiptContextOf(receipt: Omit<OutboxEnvelope, 'events'>): ReceiptContext {
  return {
    receivedAt: new Date(receipt.receivedAt),
    ip: receipt.ip,
    userAgent: receipt.userAgent,
    ...(receipt.batchSentAt ? { batchSentAt: receipt.batchSentAt } : {}),
  };
}

// Account ids are UUIDs; this is what keeps a record's schema name (account_<id>) valid.
const accountIdPattern = /^[0-9A-Za-z-]{1,40}$/;

/**
 * Whether an envelope's plan fields can be acted on: none, or a plan with one verdict per event.
 * A verdict out of place would let one event's violations strip or quarantine another.
 */
function planFieldsAgree(parsed: Partial<OutboxEnvelope>): boolean {
  if (parsed.plan === undefined && parsed.verdicts === undefined) return true;
  const { plan, verdicts, events } = parsed;
  return (
    typeof plan === 'object' &&
    plan !== null &&
    typeof plan.planId === 'string' &&
    typeof plan.policy === 'object' &&
    plan.policy !== null &&
    typeof plan.policy.actions === 'object' &&
    plan.policy.actions !== null &&
    Array.isArray(verdicts) &&
    verdicts.length === events?.length &&
    verdicts.every(
      (v) =>
        typeof v === 'object' &&
        v !== null &&
        (v.version === null || Number.isInteger(v.version)) &&
        Array.isArray(v.violations),
    )
  );
}

/**
 * The envelope with only the events at `indexes` (ascending), their verdicts kept beside them:
 * every stage that hands on part of a record (a regulation's filter, a dead letter of some of
 * its events) goes through here, so a verdict never parts from its event.
 */
export function envelopeWith(envelope: OutboxEnvelope, indexes: readonly number[]): OutboxEnvelope {
  const events = indexes.map((i) => envelope.events[i] as TrackingEvent);
  const { verdicts } = envelope;
  return verdicts === undefined
    ? { ...envelope, events }
    : { ...envelope, events, verdicts: indexes.map((i) => verdicts[i] as PlanVerdict) };
}

/**
 * The envelope of a record, or null when the record is not one: consumers dead-letter it. The
 * events inside are checked by normalizing them, one by one.
 */
export function parseOutboxEnvelope(value: Buffer | null): OutboxEnvelope | null {
  if (!value) return null;
  try {
    const parsed = parseJsonText(value.toString('utf8')) as Partial<OutboxEnvelope> | null;
    return parsed !== null &&
      typeof parsed === 'object' &&
      parsed.v === 2 &&
      typeof parsed.accountId === 'string' &&
      accountIdPattern.test(parsed.accountId) &&
      typeof parsed.writeKeyId === 'string' &&
      typeof parsed.receivedAt === 'string' &&
      !Number.isNaN(Date.parse(parsed.receivedAt)) &&
      Array.isArray(parsed.events) &&
      planFieldsAgree(parsed)
      ? (parsed as OutboxEnvelope)
      : null;
  } catch {
    return null;
  }
}
