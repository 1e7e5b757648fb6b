/** Where an event went, as the live debugger shows it (docs/management-api.md, "Debugger"). */
export type DeliveryOutcomeKind =
  'stored' | 'delivered' | 'consent_skipped' | 'skipped' | 'retried' | 'dead_lettered' | 'quarantined';

export interface DeliveryOutcomeEntry {
  /** `warehouse` or the forwarding kind (app type). */
  destination: string;
  /** The integration of a forwarding destination; null for the warehouse. */
  integrationId: string | null;
  outcome: DeliveryOutcomeKind;
  /**
   * The vendor's or the runner's reason (skips, retries, dead letters); for `quarantined`, the
   * codes of the violations its tracking plan's policy kept the event out for; null otherwise.
   */
  reason: string | null;
  /** Of a `stored` or `delivered` event: the values its plan's policy stripped (JSON Pointers); absent when none. */
  omitted?: string[];
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

/** One event sent (stored or delivered), for recordSentOutcomes. */
export interface SentEvent {
  writeKeyId: string;
  messageId: string;
  /** What its plan's policy stripped from it; empty or absent when nothing. */
  omitted?: readonly string[];
}

/**
 * Records `entry` for sent events, one call per write key and set of stripped values: an event
 * whose values were stripped carries them (`omitted`), the others none.
 */
export function recordSentOutcomes(
  recorder: OutcomeRecorder | undefined,
  events: readonly SentEvent[],
  entry: Omit<DeliveryOutcomeEntry, 'omitted'>,
): void {
  if (!recorder) return;
  const groups = new Map<string, { writeKeyId: string; omitted: readonly string[]; ids: string[] }>();
  for (const { writeKeyId, messageId, omitted = [] } of events) {
    const key = `${writeKeyId}\u0000${omitted.join('\u0000')}`;
    const group = groups.get(key) ?? { writeKeyId, omitted, ids: [] };
    group.ids.push(messageId);
    groups.set(key, group);
  }
  for (const { writeKeyId, omitted, ids } of groups.values())
    recordOutcome(
      recorder,
      writeKeyId,
      ids,
      omitted.length > 0 ? { ...entry, omitted: [...omitted] } : entry,
    );
}
