import { randomUUID } from 'node:crypto';
import type { IHeaders, Kafka } from 'kafkajs';

export interface SnapshotRecord {
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

export interface OffsetRange {
  /** First offset, inclusive, on every partition (default: the oldest kept). */
  from?: bigint;
  /** Last offset, inclusive (default: the newest when the call starts). */
  to?: bigint;
}

/**
 * The records a topic holds when the call starts, within `range`, ordered by partition and
 * offset: read with a throwaway consumer group that is deleted afterwards. For operator tools
 * and tests that look at a topic, never for delivery (it commits nothing).
 */
export async function readTopicSnapshot(
  kafka: Kafka,
  topic: string,
  range: OffsetRange = {},
  /** Gives up (throws) after this long; by default it waits as long as the read takes. */
  timeoutMs?: number,
): Promise<SnapshotRecord[]> {
  const admin = kafka.admin();
  await admin.connect();
  const groupId = `snapshot-${randomUUID()}`;
  try {
    const ends = new Map<number, bigint>();
    for (const p of await admin.fetchTopicOffsets(topic)) {
      const start = range.from !== undefined && range.from > BigInt(p.low) ? range.from : BigInt(p.low);
      const stop = range.to !== undefined && range.to + 1n < BigInt(p.high) ? range.to + 1n : BigInt(p.high);
      if (start < stop) ends.set(p.partition, stop);
    }
    if (ends.size === 0) return [];
    const records: SnapshotRecord[] = [];
    const consumer = kafka.consumer({ groupId, maxWaitTimeInMs: 100 });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      const done = new Promise<void>((resolve, reject) => {
        const timer =
          timeoutMs === undefined
            ? undefined
            : setTimeout(
                () =>
                  reject(new Error(`read ${records.length} records of ${topic} in ${timeoutMs} ms, not all`)),
                timeoutMs,
              );
        void consumer.run({
          autoCommit: false,
          eachMessage: async ({ partition, message }) => {
            const stop = ends.get(partition);
            if (stop === undefined) return;
            const offset = BigInt(message.offset);
            if (offset < stop && (range.from === undefined || offset >= range.from)) {
              records.push({
                partition,
                offset: message.offset,
                key: message.key,
                value: message.value,
                headers: message.headers ?? {},
              });
            }
            if (offset + 1n >= stop) ends.delete(partition);
            if (ends.size === 0) {
              clearTimeout(timer);
              resolve();
            }
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
    return records.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  } finally {
    await admin.disconnect();
  }
}
