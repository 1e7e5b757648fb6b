import type { TrackingEvent } from './event-schema';

/**
 * One accepted event as it is committed to the Kafka outbox: the event as the client sent it
 * (validated) and what the server knew on receipt. Consumers normalize it with normalizeEvent,
 * so every destination sees the same rows.
 */
export interface OutboxEnvelope {
  v: 1;
  accountId: string;
  writeKeyId: string;
  batchId: string;
  /** ISO time the ingestion service received the request. */
  receivedAt: string;
  ip: string | null;
  userAgent: string | null;
  /** The batch's sentAt, for events without their own. */
  batchSentAt?: string;
  event: TrackingEvent;
}

/** Per-visitor ordering: all events of one anonymous id land on one partition. */
export const outboxKey = (envelope: OutboxEnvelope) => `${envelope.accountId}:${envelope.event.anonymousId}`;

export function parseOutboxEnvelope(value: Buffer | null): OutboxEnvelope | null {
  if (!value) return null;
  try {
    const parsed = JSON.parse(value.toString('utf8')) as Partial<OutboxEnvelope>;
    return parsed.v === 1 && typeof parsed.accountId === 'string' && parsed.event
      ? (parsed as OutboxEnvelope)
      : null;
  } catch {
    return null;
  }
}
