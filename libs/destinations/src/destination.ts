import type { IHeaders } from 'kafkajs';

/** One record read from the outbox (or the retry topic), as a destination receives it. */
export interface DeliveryMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | null;
  value: Buffer | null;
  headers: IHeaders;
  timestamp: string;
}

/** A record, or part of one, that a target did not take: the runner parks it for a retry or dead-letters it. */
export interface FailedDelivery {
  message: DeliveryMessage;
  /** What to park: the record's value, or an envelope of only the events that failed. */
  value: Buffer;
  /** The target that failed: an integration id, or the destination kind when it has one target. */
  target: string;
  reason: string;
  /** Network errors, 5xx, 408 and 429 are worth another attempt; other 4xx and bad config are not. */
  retryable: boolean;
  /** The vendor's Retry-After, a lower bound for the next attempt. */
  retryAfterMs?: number;
  /**
   * The target cannot take anything now (a warehouse down or refusing us), through no fault of
   * the record: it is parked in the retry topic, due after `retryAfterMs`, however many times
   * that happened, and never dead-lettered (an outage is not bad data). Such a try is not
   * counted as an attempt.
   */
  holdUntilAvailable?: boolean;
}

/** One warehouse's health as a consumer sees it: its breaker, and what opened it. */
export interface WarehouseHealth {
  warehouseId: string;
  breaker: 'closed' | 'open' | 'half-open';
  status: 'active' | 'unavailable' | 'misconfigured';
}

export interface DeliveryReport {
  /** Events the targets accepted. */
  delivered: number;
  /** Events withheld by consent (context.consent denied the target's category). */
  consentSkipped: number;
  failed: FailedDelivery[];
}

/**
 * Thrown by a destination when nothing can be delivered now (its store is down, the control
 * plane cannot be asked): the runner keeps the batch uncommitted and tries it again with
 * backoff, heartbeating meanwhile. Any other error thrown by `deliver` is a bug or a state an
 * operator must see: the consumer stops and the process exits non-zero.
 */
export class DestinationUnavailable extends Error {
  override readonly name = 'DestinationUnavailable';
}

/**
 * A delivery target. `deliver` reports what it could not deliver record by record, for the
 * runner to park: data it cannot store or a vendor refused, never retried forever. It throws
 * DestinationUnavailable only when nothing can be delivered now.
 */
export interface Destination {
  readonly kind: string;
  deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport>;
  close?(): Promise<void>;
  /** Integrations whose circuit breaker is open now (forwarding destinations), for metrics. */
  openCircuits?(): number;
  /** Each warehouse the destination writes to, for metrics (the warehouse destination). */
  warehouseHealth?(): WarehouseHealth[];
}

/** Headers of a parked record (retry and dead-letter topics). */
export const deliveryHeaders = {
  target: 'x-delivery-target',
  attempt: 'x-delivery-attempt',
  nextAttemptAt: 'x-delivery-next-attempt-at',
  reason: 'x-delivery-reason',
  destination: 'x-delivery-destination',
  permanent: 'x-delivery-permanent',
  deadLetteredAt: 'x-delivery-dead-lettered-at',
  origin: 'x-delivery-origin',
  /** `true` on a record held until its target is available again (FailedDelivery.holdUntilAvailable). */
  held: 'x-delivery-held',
} as const;

export function headerText(headers: IHeaders, name: string): string | undefined {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? undefined : first.toString();
}

/** The one target a retried record is for; undefined for a record of the outbox (every target). */
export const retryTargetOf = (message: DeliveryMessage): string | undefined =>
  headerText(message.headers, deliveryHeaders.target);

/** A record that is not an outbox envelope: no attempt can deliver it. */
export const notAnEnvelope = (message: DeliveryMessage, target: string): FailedDelivery => ({
  message,
  value: message.value ?? Buffer.alloc(0),
  target,
  reason: 'not_an_outbox_envelope: the record is not a v2 outbox envelope',
  retryable: false,
});
