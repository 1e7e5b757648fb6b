import type { Kafka } from 'kafkajs';
import { readTopicSnapshot } from '@pipeline/kafka';
import { headerText } from '../destination';

export interface TopicRecord {
  partition: number;
  offset: string;
  value: string;
  headers: Record<string, string>;
}

/** Every record a topic holds now (tests), with its value and headers as text. */
export async function topicRecords(kafka: Kafka, topic: string): Promise<TopicRecord[]> {
  return (await readTopicSnapshot(kafka, topic)).map(({ partition, offset, value, headers }) => ({
    partition,
    offset,
    value: value?.toString('utf8') ?? '',
    headers: Object.fromEntries(Object.keys(headers).map((name) => [name, headerText(headers, name) ?? ''])),
  }));
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
