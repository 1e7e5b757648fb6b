import { envelopeWith, parseOutboxEnvelope } from '@pipeline/events';
import { ControlPlaneUnavailable, decideEach, type RegulatedSubjects } from '@pipeline/tenancy';
import { DestinationUnavailable, headerText, type DeliveryMessage } from './destination';

/** Where an account's regulated subjects come from (RegulatedSubjectsCache in the delivery app). */
export interface RegulationSource {
  /** Throws ControlPlaneUnavailable when they cannot be read. */
  forAccount(accountId: string): Promise<RegulatedSubjects>;
}

/** What is left of a batch once its regulated events are taken out. */
export interface RegulatedBatch {
  /** The records to hand the destination, in their order. */
  messages: DeliveryMessage[];
  /** Events taken out, by why. */
  suppressed: number;
  deleted: number;
}

/** The header ingestion writes on every outbox record (outbox-messages.ts): the envelope's account. */
const ACCOUNT_HEADER = 'account-id';

/**
 * Takes the events a privacy regulation names out of a batch, before any attempt at delivering
 * it (the outbox, a retry, a replayed dead letter: every attempt asks, so a regulation made while
 * a record waited still applies). A record with some regulated events is handed on with the same
 * key, headers and position and its envelope re-serialized without them, as ingestion serializes
 * it; one left with none is not handed on (the runner commits past it). An envelope's
 * `receivedAt` is what a deletion's cut-off is compared with.
 *
 * Throws DestinationUnavailable when an account's subjects cannot be read: the runner holds the
 * batch and tries it again, never delivers what may be regulated. A record that is not an
 * envelope is handed on untouched (the destination dead-letters it as it always did).
 *
 * The cost for an account without subjects: an outbox record names its account in a header, so
 * it is handed on without being parsed; a record of the retry topic (no such header) is parsed.
 */
export async function withoutRegulatedEvents(
  messages: readonly DeliveryMessage[],
  regulations: RegulationSource,
): Promise<RegulatedBatch> {
  const accounts = new Map<string, Promise<RegulatedSubjects>>();
  const subjectsOf = (accountId: string): Promise<RegulatedSubjects> => {
    let subjects = accounts.get(accountId);
    if (!subjects) {
      subjects = regulations.forAccount(accountId);
      // Awaited in order below; a rejection of one asked ahead must not go unhandled meanwhile.
      subjects.catch(() => undefined);
      accounts.set(accountId, subjects);
    }
    return subjects;
  };
  const out: RegulatedBatch = { messages: [], suppressed: 0, deleted: 0 };
  try {
    for (const message of messages) {
      const named = headerText(message.headers, ACCOUNT_HEADER);
      // Stryker disable next-line BlockStatement: the fast path; without it the record is parsed and handed on the same
      if (named !== undefined && (await subjectsOf(named)).size === 0) {
        out.messages.push(message);
        continue;
      }
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        out.messages.push(message);
        continue;
      }
      const subjects = await subjectsOf(envelope.accountId);
      // Stryker disable next-line ConditionalExpression,BlockStatement: decideEach keeps every event then; this spares the filter
      if (subjects.size === 0) {
        out.messages.push(message);
        continue;
      }
      const decisions = decideEach(subjects, envelope.events, Date.parse(envelope.receivedAt));
      const kept: number[] = [];
      decisions.forEach((decision, index) => {
        if (decision === 'suppressed') out.suppressed += 1;
        else if (decision === 'deleted') out.deleted += 1;
        else kept.push(index);
      });
      if (kept.length === envelope.events.length) out.messages.push(message);
      else if (kept.length > 0)
        out.messages.push({ ...message, value: Buffer.from(JSON.stringify(envelopeWith(envelope, kept))) });
    }
  } catch (error) {
    if (error instanceof ControlPlaneUnavailable)
      throw new DestinationUnavailable(`regulated subjects cannot be read: ${error.message}`);
    throw error;
  }
  return out;
}
