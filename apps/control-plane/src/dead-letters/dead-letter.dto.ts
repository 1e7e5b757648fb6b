import type { DeadLetterStatus } from './dead-letter.entity';

/** An event of a dead letter as the view shows it: the event as received, or a stub (over 16 KB, or past 64 KB shown). */
export interface DeadLetterEvent {
  [field: string]: unknown;
}

/** One dead-lettered record of the account for one destination (docs/management-api.md, "Dead letters"). */
export interface DeadLetterView {
  /** @format uuid */
  id: string;
  /** The delivery kind: `warehouse`, `log` or a destination app type (`amplitude`, `webhook`, ...). */
  destination: string;
  /** The target: the integration the events were for (forwarding kinds), `warehouse:<id>`, or the kind. */
  destinationId: string;
  /** The display name of the destination app of that integration (or of that app), else null. */
  destinationName: string | null;
  /** `attempts_exhausted` (a retryable failure out of attempts), else the reason's code (`http_400`, `data_error`, ..., `other`). */
  reasonCode: string;
  /** The delivery's last error, as the consumer wrote it. */
  reason: string;
  /** Attempts of its last delivery before it was dead-lettered. */
  attempts: number;
  /** True when the failure was permanent (no retry could help), false when attempts ran out. */
  permanent: boolean;
  /** Times this record was dead-lettered (a replay that fails again adds one). */
  deadLetterCount: number;
  firstSeenAt: string;
  lastSeenAt: string;
  status: DeadLetterStatus;
  replayedAt: string | null;
  discardedAt: string | null;
  /** The messageIds of every event of the record. */
  messageIds: string[];
  /** Events in the record (`messageIds` has them all). */
  eventCount: number;
  /**
   * The record's first 10 events; an event over 16 KB as JSON, or past 64 KB of events shown
   * together, is `{ messageId, type, truncated: true }`.
   */
  events: DeadLetterEvent[];
}

/**
 * The dead letters a replay or discard is for: the ids and filters together (AND), at least
 * one of them. Only the account's `pending` records are taken, at most 1000 in one call.
 */
export interface DeadLetterSelectionBody {
  /** Dead letter ids (1 to 1000); an id the account does not have answers 404 and nothing is done. */
  ids?: string[];
  /** A delivery kind. */
  destination?: string;
  /** A target (`destinationId` of the view). */
  destinationId?: string;
  reasonCode?: string;
  /** Last seen at or after (ISO 8601). */
  since?: string;
  /** Last seen before (ISO 8601). */
  until?: string;
}

export interface DeadLetterReplayResult {
  /** Records put back in their destination's retry topic. */
  replayed: number;
  /** Records selected that were not pending (already replayed or discarded) or beyond the 1000 of one call. */
  skipped: number;
}

export interface DeadLetterDiscardResult {
  /** Records marked `discarded`: never replayed. */
  discarded: number;
  /** Records selected that were not pending (already replayed or discarded) or beyond the 1000 of one call. */
  skipped: number;
}
