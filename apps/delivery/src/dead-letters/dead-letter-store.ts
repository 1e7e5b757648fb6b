import type { Kafka, Producer } from 'kafkajs';
import {
  deadLetterOf,
  deliveryTopicsFor,
  replayDeadLetters as replay,
  type DeadLetter,
  type DestinationKind,
} from '@pipeline/destinations';
import { readTopicSnapshot, type OffsetRange } from '@pipeline/kafka';

export type { DeadLetter } from '@pipeline/destinations';

/** A destination kind's dead letters, from `range.from` up to what the topic held when the call started. */
export async function readDeadLetters(
  kafka: Kafka,
  kind: DestinationKind,
  range: OffsetRange = {},
  topicPrefix = '',
): Promise<DeadLetter[]> {
  const topic = deliveryTopicsFor(kind, topicPrefix).deadLetter.topic;
  return (await readTopicSnapshot(kafka, topic, range)).map(deadLetterOf);
}

/**
 * Puts dead letters back in the kind's retry topic, due now and with a fresh attempt count,
 * for the running consumer to deliver again to the same target: the same function the control
 * plane's `POST /api/v1/dead-letters/replay` sends with (@pipeline/destinations). Destinations
 * are idempotent on messageId, so replaying a letter twice does not duplicate its events.
 */
export function replayDeadLetters(
  producer: Producer,
  kind: DestinationKind,
  letters: readonly DeadLetter[],
  topicPrefix = '',
): Promise<number> {
  return replay(producer, new Map([[kind, letters]]), topicPrefix);
}
