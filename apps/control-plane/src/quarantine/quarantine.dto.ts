import type { Violation } from '@pipeline/tracking-plans';

/** Where a quarantined event is: still held, put back for delivery, or given up. */
export type QuarantineStatus = 'quarantined' | 'replayed' | 'discarded';
export const quarantineStatuses: readonly QuarantineStatus[] = ['quarantined', 'replayed', 'discarded'];

/** One event a tracking plan's policy kept out of one destination. */
export interface QuarantinedEventView {
  /** The quarantined event's id (replay and discard take it). */
  id: string;
  messageId: string;
  writeKeyId: string | null;
  /** The delivery kind (`warehouse`, `amplitude`, ...). */
  destination: string;
  /** The target: an integration id, or the kind for the warehouse. */
  destinationId: string;
  planId: string;
  /** The plan version the door held the event to; null when the door could not read it. */
  planVersion: number | null;
  /** The event's type and its name (track: the event; page and screen: the name). */
  type: string;
  name: string | null;
  /** The violation codes, each once. */
  codes: string[];
  violations: Violation[];
  /** When ingestion received the event (ISO 8601). */
  receivedAt: string;
  /** When the consumer quarantined it (ISO 8601). */
  quarantinedAt: string;
  status: QuarantineStatus;
  replayedAt: string | null;
  /** The plan version it passed when it was replayed. */
  replayedVersion: number | null;
  discardedAt: string | null;
  /** The dead letter that holds it (management API, "Dead letters"). */
  deadLetterId: string;
}

/** One quarantined event with the event itself, as the door received it. */
export interface QuarantinedEventDetail extends QuarantinedEventView {
  event: Record<string, unknown>;
}

/** Which quarantined events a replay or a discard takes: ids, or a filter (at most 1000 events). */
export interface QuarantineSelectionBody {
  /**
   * Quarantined event ids; without them, every still-quarantined event the filter matches.
   * @maxItems 1000
   * @minItems 1
   */
  ids?: string[];
  /** A plan id. */
  planId?: string;
  /** A write key id. */
  writeKeyId?: string;
  /** A delivery kind. */
  destination?: string;
  /** A target: an integration id, or the kind. */
  destinationId?: string;
  /** A violation code the event has. */
  code?: string;
  /** The event's name. */
  name?: string;
  /** Received at or after (ISO 8601). */
  since?: string;
  /** Received before (ISO 8601). */
  until?: string;
}

export interface QuarantineReplayBody extends QuarantineSelectionBody {
  /**
   * The published version to check the events against; the plan's latest when absent. Needs
   * `planId` (a version number means nothing across plans).
   * @isInt
   * @minimum 1
   */
  version?: number;
}

export interface QuarantineReplayResult {
  /** Events that now pass the destination's policy: put back for delivery, with their message ids. */
  replayed: number;
  /** Events that still break the policy: left in quarantine, their violations under `version` unchanged. */
  stillQuarantined: number;
  /** Selected events not taken (not quarantined any more, or beyond the 1000 of one call). */
  skipped: number;
}

export interface QuarantineDiscardResult {
  discarded: number;
  skipped: number;
}
