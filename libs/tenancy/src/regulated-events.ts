import type { EventIdentity, RegulatedSubjects, RegulationDecision } from './regulated-subjects';

/**
 * The decision for each of `events` received at `receivedAtMs`. Null for every event of an
 * account without subjects, without hashing; otherwise each identifier is hashed once per
 * account until RegulatedSubjects forgets it (REMEMBERED_IDENTIFIERS).
 */
export function decideEach(
  subjects: RegulatedSubjects,
  events: readonly EventIdentity[],
  receivedAtMs: number,
): RegulationDecision[] {
  // Stryker disable next-line ConditionalExpression: decide() answers null without hashing then too; this spares the calls
  if (subjects.size === 0) return events.map(() => null);
  return events.map((event) => subjects.decide(event, receivedAtMs));
}
