import type { Message } from 'kafkajs';
import {
  outboxKey,
  toOutboxEnvelopes,
  type OutboxEnvelope,
  type PlanVerdict,
  type TrackingEvent,
} from '@pipeline/events';

/**
 * The outbox records of a batch (with the plan door's verdicts, aligned with `events`, when its
 * key binds a plan): its envelopes (split to stay under the record limit), keyed
 * by visitor so each visitor's events stay in order, with the account and batch in the headers
 * as in the envelope, for anyone reading the topic without parsing the records.
 */
export function outboxMessages(
  receipt: Omit<OutboxEnvelope, 'events'>,
  events: readonly TrackingEvent[],
  bodyBytes: number,
  verdicts?: readonly PlanVerdict[],
): Message[] {
  return toOutboxEnvelopes(receipt, events, bodyBytes, verdicts).map(({ envelope, json }) => ({
    key: outboxKey(envelope),
    value: json,
    headers: {
      'account-id': envelope.accountId,
      'batch-id': envelope.batchId,
      'event-count': String(envelope.events.length),
    },
  }));
}
