import type { EventIdentity, RegulatedSubjects, RegulationDecision } from './regulated-subjects';

/** An event's identifiers as one key: each length-prefixed, so no two triples share one. */
function identityKey(event: EventIdentity): string {
  // Stryker disable next-line StringLiteral: any start, the same for every key, keeps them apart
  let key = '';
  for (const id of [event.userId, event.anonymousId, event.previousId]) {
    // Stryker disable next-line StringLiteral: a missing id may stand for any text, as long as it is one text
    const text = typeof id === 'string' ? id : '';
    key += `${text.length}:${text}`;
  }
  return key;
}

/**
 * The decision for each of `events` received at `receivedAtMs`, deciding each distinct set of
 * identifiers once: a batch is mostly one visitor's events, and each decision costs a keyed hash
 * per identifier. The identifiers are kept only for the call. Null for every event of an account
 * without subjects, without hashing.
 */
export function decideEach(
  subjects: RegulatedSubjects,
  events: readonly EventIdentity[],
  receivedAtMs: number,
): RegulationDecision[] {
  if (subjects.size === 0) return events.map(() => null);
  const decided = new Map<string, RegulationDecision>();
  return events.map((event) => {
    const key = identityKey(event);
    let decision = decided.get(key);
    if (decision === undefined) {
      decision = subjects.decide(event, receivedAtMs);
      decided.set(key, decision);
    }
    return decision;
  });
}
