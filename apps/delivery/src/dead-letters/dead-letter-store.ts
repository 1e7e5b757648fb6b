import { randomUUID } from 'node:crypto';
import type { Kafka, Producer } from 'kafkajs';
import { deliveryHeaders, headerText, type DestinationKind, deliveryTopicsFor } from '@pipeline/destinations';
import { parseOutboxEnvelope } from '@pipeline/events';

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

export interface OffsetRange {
  /** First offset, inclusive (default: the oldest kept). */
  from?: bigint;
  /** Last offset, inclusive (default: the newest at the time of the call). */
  to?: bigint;
}

/**
 * Reads a destination kind's dead-letter topic, from `range.from` up to what it held when the
 * call started, with a throwaway consumer group that is deleted afterwards.
 */
export async function readDeadLetters(
  kafka: Kafka,
  kind: DestinationKind,
  range: OffsetRange = {},
  topicPrefix = '',
): Promise<DeadLetter[]> {
  const topic = `${topicPrefix}${deliveryTopicsFor(kind).deadLetter.topic}`;
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = new Map<number, bigint>();
    for (const p of await admin.fetchTopicOffsets(topic)) {
      const start = range.from !== undefined && range.from > BigInt(p.low) ? range.from : BigInt(p.low);
      const stop = range.to !== undefined && range.to + 1n < BigInt(p.high) ? range.to + 1n : BigInt(p.high);
      if (start < stop) ends.set(p.partition, stop);
    }
    if (ends.size === 0) return [];
    const groupId = `dead-letters-cli-${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 200 });
    const letters: DeadLetter[] = [];
    try {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const done = new Promise<void>((resolve) => {
        void consumer.run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            const stop = ends.get(partition);
            if (stop === undefined) return;
            const offset = BigInt(message.offset);
            if (offset < stop && (range.from === undefined || offset >= range.from)) {
              const headers = message.headers ?? {};
              letters.push({
                partition,
                offset: message.offset,
                key: message.key?.toString('utf8') ?? null,
                value: message.value,
                target: headerText(headers, deliveryHeaders.target),
                reason: headerText(headers, deliveryHeaders.reason),
                attempts: Number(headerText(headers, deliveryHeaders.attempt) ?? '0'),
                permanent: headerText(headers, deliveryHeaders.permanent) === 'true',
                deadLetteredAt: headerText(headers, deliveryHeaders.deadLetteredAt),
                origin: headerText(headers, deliveryHeaders.origin),
                messageIds: parseOutboxEnvelope(message.value)?.events.map((e) => e.messageId) ?? [],
              });
            }
            if (offset + 1n >= stop) ends.delete(partition);
            if (ends.size === 0) resolve();
          },
        });
      });
      if (range.from !== undefined) {
        for (const partition of [...ends.keys()])
          consumer.seek({ topic, partition, offset: range.from.toString() });
      }
      await done;
    } finally {
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return letters.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  } finally {
    await admin.disconnect();
  }
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
  const topic = `${topicPrefix}${deliveryTopicsFor(kind).retry.topic}`;
  const now = String(Date.now());
  await producer.send({
    topic,
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
          letter.origin ??
          `${topicPrefix}${deliveryTopicsFor(kind).deadLetter.topic}/${letter.partition}/${letter.offset}`,
      },
    })),
  });
  return letters.length;
}
