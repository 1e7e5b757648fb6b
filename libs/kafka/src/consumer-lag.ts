import type { Admin } from 'kafkajs';

export interface ConsumerLag {
  /** Records of the topic the group has not committed yet. */
  total: number;
  partitions: { partition: number; lag: number }[];
}

/**
 * A consumer group's lag on a topic: per partition, the end offset minus the committed one
 * (a group that has committed nothing yet counts from the partition's first record).
 */
export async function consumerGroupLag(
  admin: Admin,
  groupId: string,
  topic: string,
  /** The topic's offsets, when the caller already fetched them for several groups. */
  topicOffsets?: Awaited<ReturnType<Admin['fetchTopicOffsets']>>,
): Promise<ConsumerLag> {
  const ends = topicOffsets ?? (await admin.fetchTopicOffsets(topic));
  const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
  const partitions = ends.map((end) => {
    const offset = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
    return { partition: end.partition, lag: Number(end.high) - (offset >= 0 ? offset : Number(end.low)) };
  });
  return { total: partitions.reduce((sum, p) => sum + p.lag, 0), partitions };
}
