import type { OutboundEvent } from './outbound-event';

/** An event the vendor did not take, and whether sending it again later may work. */
export interface UndeliveredEvent {
  event: OutboundEvent;
  reason: string;
  retryable: boolean;
}

export interface DeliveryFailureDetails {
  status?: number;
  /** The remote body or socket error behind `reason`, for logs only (never shown to tenants). */
  detail?: string;
  retryAfterMs?: number;
  /** Events the vendor accepted before or beside the failure; never send them again. */
  sent?: number;
  /** Requests made, failed ones included. */
  requests?: number;
  /** Every event that was not delivered, each with its own verdict. */
  undelivered?: readonly UndeliveredEvent[];
  /** Events with nothing to send to this vendor (see SendOutcome.skipped). */
  skipped?: readonly SkippedEvent[];
}

/** An event the forwarder did not send on purpose: the vendor has no equivalent of it. */
export interface SkippedEvent {
  messageId: string;
  reason: string;
}

/**
 * Thrown by Forwarder.send when some events were not delivered. `retryable` is true when at
 * least one of them may go through later (network, timeout, 408, 429, 5xx); false when none
 * can (other 4xx, events the vendor rejected, invalid config or missing credentials).
 * `undelivered` says which events to retry and which to dead-letter; the others were accepted
 * or skipped, and resending them would duplicate them at vendors without deduplication.
 */
export class DeliveryFailure extends Error {
  readonly status?: number;
  readonly detail?: string;
  readonly retryAfterMs?: number;
  readonly sent: number;
  readonly requests: number;
  readonly undelivered: readonly UndeliveredEvent[];
  readonly skipped: readonly SkippedEvent[];

  constructor(
    readonly reason: string,
    readonly retryable: boolean,
    details: DeliveryFailureDetails = {},
  ) {
    super(reason);
    this.name = 'DeliveryFailure';
    this.status = details.status;
    this.detail = details.detail;
    this.retryAfterMs = details.retryAfterMs;
    this.sent = details.sent ?? 0;
    this.requests = details.requests ?? 0;
    this.undelivered = details.undelivered ?? [];
    this.skipped = details.skipped ?? [];
  }
}
