/** Where an event went, as the live debugger shows it (docs/management-api.md, "Debugger"). */
export type DeliveryOutcomeKind =
  'stored' | 'delivered' | 'consent_skipped' | 'skipped' | 'retried' | 'dead_lettered';

export interface DeliveryOutcomeEntry {
  /** `warehouse` or the forwarding kind (app type). */
  destination: string;
  /** The integration of a forwarding destination; null for the warehouse. */
  integrationId: string | null;
  outcome: DeliveryOutcomeKind;
  /** The vendor's or the runner's reason (skips, retries, dead letters); null otherwise. */
  reason: string | null;
}

/**
 * Told where each event went, for the live debugger. Optional everywhere: the destinations and
 * the runner work the same without one. An implementation must be cheap, synchronous and never
 * throw: it is called on the delivery path and never awaited (the delivery app's writes to
 * Redis, sampled per write key).
 */
export interface OutcomeRecorder {
  record(writeKeyId: string, messageIds: readonly string[], entry: DeliveryOutcomeEntry): void;
}

/** Calls the recorder, whatever it does: a recorder's bug never fails a delivery. */
export function recordOutcome(
  recorder: OutcomeRecorder | undefined,
  writeKeyId: string,
  messageIds: readonly string[],
  entry: DeliveryOutcomeEntry,
): void {
  if (!recorder || messageIds.length === 0) return;
  try {
    recorder.record(writeKeyId, messageIds, entry);
  } catch {
    // Nothing: the debugger misses an outcome.
  }
}
