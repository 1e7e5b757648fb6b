import type { Kafka, Producer } from 'kafkajs';
import { deliveryHeaders, headerText, type DestinationKind, deliveryTopicsFor } from '@pipeline/destinations';
import { parseOutboxEnvelope } from '@pipeline/events';
import { readTopicSnapshot, type OffsetRange } from '@pipeline/kafka';

export interface DeadLetter {
  partition: number;
  offset: string;
  key: string | null;
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

/** A destination kind's dead letters, from `range.from` up to what the topic held when the call started. */
export async function readDeadLetters(
  kafka: Kafka,
  kind: DestinationKind,
  range: OffsetRange = {},
  topicPrefix = '',
): Promise<DeadLetter[]> {
  const topic = deliveryTopicsFor(kind, topicPrefix).deadLetter.topic;
  return (await readTopicSnapshot(kafka, topic, range)).map(({ partition, offset, key, value, headers }) => ({
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
  }));
}

/**
 * Puts dead letters back in the kind's retry topic, due now and with a fresh attempt count,
 * for the running consumer to deliver again to the same target. Destinations are idempotent
 * on messageId, so replaying a letter twice does not duplicate its events.
 */
export async function replayDeadLetters(
  producer: Producer,
  kind: DestinationKind,
  letters: readonly DeadLetter[],
  topicPrefix = '',
): Promise<number> {
  if (letters.length === 0) return 0;
  const topics = deliveryTopicsFor(kind, topicPrefix);
  const now = String(Date.now());
  await producer.send({
    topic: topics.retry.topic,
    acks: -1,
    messages: letters.map((letter) => ({
      key: letter.key,
      value: letter.value,
      headers: {
        [deliveryHeaders.destination]: kind,
        ...(letter.target ? { [deliveryHeaders.target]: letter.target } : {}),
        [deliveryHeaders.attempt]: '0',
        [deliveryHeaders.nextAttemptAt]: now,
        [deliveryHeaders.reason]: `replayed from dead letter ${letter.partition}/${letter.offset}: ${letter.reason ?? ''}`,
        [deliveryHeaders.origin]:
          letter.origin ?? `${topics.deadLetter.topic}/${letter.partition}/${letter.offset}`,
      },
    })),
  });
  return letters.length;
}
