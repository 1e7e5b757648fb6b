import { randomUUID } from 'node:crypto';
import type { IHeaders, Kafka } from 'kafkajs';
import { headerText } from '../destination';

export interface TopicRecord {
  partition: number;
  offset: string;
  value: string;
  headers: Record<string, string>;
}

const textHeaders = (headers: IHeaders | undefined): Record<string, string> =>
  Object.fromEntries(Object.keys(headers ?? {}).map((name) => [name, headerText(headers ?? {}, name) ?? '']));

/** Every record a topic holds now (tests): read with a throwaway group, which is deleted after. */
export async function topicRecords(kafka: Kafka, topic: string): Promise<TopicRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = new Map(
    (await admin.fetchTopicOffsets(topic))
      .filter((p) => p.high !== p.low)
      .map((p) => [p.partition, BigInt(p.high)]),
  );
  const records: TopicRecord[] = [];
  if (ends.size > 0) {
    const groupId = `test-reader-${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve) => {
      void consumer.run({
        eachMessage: async ({ partition, message }) => {
          records.push({
            partition,
            offset: message.offset,
            value: message.value?.toString('utf8') ?? '',
            headers: textHeaders(message.headers),
          });
          const end = ends.get(partition);
          if (end !== undefined && BigInt(message.offset) + 1n >= end) ends.delete(partition);
          if (ends.size === 0) resolve();
        },
      });
    });
    await consumer.disconnect();
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
  await admin.disconnect();
  return records;
}

/** Polls until `predicate` holds (tests). */
export async function waitFor(
  predicate: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const started = Date.now();
  while (!(await predicate())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
