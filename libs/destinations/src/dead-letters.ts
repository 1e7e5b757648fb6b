import type { IHeaders, Message, TopicMessages } from 'kafkajs';
import { parseOutboxEnvelope } from '@pipeline/events';
import { deliveryHeaders, headerText } from './destination';
import { deliveryTopicsFor, type DestinationKind } from './destination-kinds';
import { deadLetterReason } from './retry-schedule';

// A dead letter as the operator CLI and the control plane's dead-letter index read it, and the
// one way both put one back in its kind's retry topic.

export interface DeadLetter {
  partition: number;
  offset: string;
  key: string | Buffer | null;
  value: Buffer | null;
  target: string | undefined;
  reason: string | undefined;
  attempts: number;
  permanent: boolean;
  deadLetteredAt: string | undefined;
  origin: string | undefined;
  /** The message ids of the events it holds (none when the record is not an envelope). */
  messageIds: string[];
}

/** What replaying a dead letter needs of it. */
export type ReplayableLetter = Pick<
  DeadLetter,
  'partition' | 'offset' | 'key' | 'value' | 'target' | 'reason' | 'origin'
>;

/** A record of a dead-letter topic, as its consumer or a snapshot reads it. */
export interface DeadLetterRecord {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

/** The dead letter a record of a kind's dead-letter topic holds (the headers `park()` wrote). */
export function deadLetterOf({ partition, offset, key, value, headers }: DeadLetterRecord): DeadLetter {
  return {
    partition,
    offset,
    key: key?.toString('utf8') ?? null,
    value,
    target: headerText(headers, deliveryHeaders.target),
    reason: headerText(headers, deliveryHeaders.reason),
    attempts: Number(headerText(headers, deliveryHeaders.attempt) ?? '0'),
    permanent: headerText(headers, deliveryHeaders.permanent) === 'true',
    deadLetteredAt: headerText(headers, deliveryHeaders.deadLetteredAt),
    origin: headerText(headers, deliveryHeaders.origin),
    messageIds: parseOutboxEnvelope(value)?.events.map((e) => e.messageId) ?? [],
  };
}

/**
 * A dead letter's reason code: `attempts_exhausted` for a retryable failure that ran out of
 * attempts, else the code its reason starts with (`http_400`, `data_error`, ...; `other`), as
 * the dead-letter metric labels it.
 */
export const deadLetterReasonCode = (letter: Pick<DeadLetter, 'permanent' | 'reason'>): string =>
  deadLetterReason(!letter.permanent, letter.reason ?? '');

/**
 * The records that put `letters` back in the kind's retry topic, due now and with a fresh
 * attempt count, for the running consumer to deliver again to the same target. The origin is
 * kept, so a replayed record that dead-letters again is the same dead letter.
 */
export function deadLetterReplayMessages(
  kind: DestinationKind,
  letters: readonly ReplayableLetter[],
  topicPrefix = '',
  now = Date.now(),
): TopicMessages {
  const topics = deliveryTopicsFor(kind, topicPrefix);
  const messages: Message[] = letters.map((letter) => ({
    key: letter.key,
    value: letter.value,
    headers: {
      [deliveryHeaders.destination]: kind,
      ...(letter.target ? { [deliveryHeaders.target]: letter.target } : {}),
      [deliveryHeaders.attempt]: '0',
      [deliveryHeaders.nextAttemptAt]: String(now),
      [deliveryHeaders.reason]: `replayed from dead letter ${letter.partition}/${letter.offset}: ${letter.reason ?? ''}`,
      [deliveryHeaders.origin]:
        letter.origin ?? `${topics.deadLetter.topic}/${letter.partition}/${letter.offset}`,
    },
  }));
  return { topic: topics.retry.topic, messages };
}

/** What replaying needs of a producer: one acknowledged batch (kafkajs' Producer has it). */
export interface ReplayProducer {
  sendBatch(batch: { topicMessages: TopicMessages[]; acks: number }): Promise<unknown>;
}

/**
 * What one replay send carries at most (keys, values and headers): a broker refuses a record
 * batch over its `message.max.bytes` (1 MB by default), so several 512 KB letters never share
 * one send. A letter larger than this alone still goes, alone.
 */
export const REPLAY_SEND_BYTES = 900 * 1024;

const replayBytesOf = (letter: ReplayableLetter): number =>
  (letter.value?.length ?? 0) +
  (letter.key === null ? 0 : Buffer.byteLength(letter.key)) +
  Buffer.byteLength(letter.reason ?? '') +
  Buffer.byteLength(letter.target ?? '') +
  Buffer.byteLength(letter.origin ?? '') +
  256;

/**
 * The letters in sends of at most `maxBytes` each (a larger letter alone), in their order.
 * Pure, exported for its tests.
 */
export function replaySends<T extends ReplayableLetter>(
  byKind: ReadonlyMap<DestinationKind, readonly T[]>,
  maxBytes = REPLAY_SEND_BYTES,
): Map<DestinationKind, T[]>[] {
  const sends: Map<DestinationKind, T[]>[] = [];
  let current = new Map<DestinationKind, T[]>();
  let bytes = 0;
  for (const [kind, letters] of byKind)
    for (const letter of letters) {
      const size = replayBytesOf(letter);
      if (bytes > 0 && bytes + size > maxBytes) {
        sends.push(current);
        current = new Map();
        bytes = 0;
      }
      current.set(kind, [...(current.get(kind) ?? []), letter]);
      bytes += size;
    }
  if (bytes > 0) sends.push(current);
  return sends;
}

/**
 * Puts dead letters of several kinds back in their retry topics, in sends of at most
 * REPLAY_SEND_BYTES, each acknowledged by every in-sync replica (acks -1). Destinations are
 * idempotent on messageId, so replaying a letter twice (a later send failed, the caller
 * replays again) does not duplicate its events. The number of records sent.
 */
export async function replayDeadLetters(
  producer: ReplayProducer,
  byKind: ReadonlyMap<DestinationKind, readonly ReplayableLetter[]>,
  topicPrefix = '',
  maxBytes = REPLAY_SEND_BYTES,
): Promise<number> {
  const now = Date.now();
  let sent = 0;
  for (const send of replaySends(byKind, maxBytes)) {
    const topicMessages = [...send].map(([kind, letters]) =>
      deadLetterReplayMessages(kind, letters, topicPrefix, now),
    );
    await producer.sendBatch({ topicMessages, acks: -1 });
    sent += topicMessages.reduce((sum, batch) => sum + batch.messages.length, 0);
  }
  return sent;
}
