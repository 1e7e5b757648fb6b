import type { Admin, Kafka } from 'kafkajs';
import type { Logger } from '@pipeline/logger';

export interface TopicSpec {
  topic: string;
  numPartitions: number;
  /** Topic-level settings, e.g. retention.ms. */
  configEntries?: Record<string, string>;
}

/**
 * The topics of the pipeline, with explicit partition counts. Partitions bound how many
 * consumers of one group work in parallel; raising the count later remaps keys to partitions,
 * so it is set generously up front.
 */
export const pipelineTopics = {
  /** The durable outbox: every accepted tracking event, keyed by write key's account. */
  trackingEvents: {
    topic: 'tracking.events.v1',
    numPartitions: 12,
    configEntries: { 'retention.ms': String(7 * 24 * 3600 * 1000) },
  },
} as const satisfies Record<string, TopicSpec>;

/** A topic of the pipeline under KAFKA_TOPIC_PREFIX. */
export const prefixedTopic = (spec: TopicSpec, prefix: string): TopicSpec =>
  prefix ? { ...spec, topic: `${prefix}${spec.topic}` } : spec;

/**
 * The topics' metadata once every partition has a leader. A topic another process created a
 * moment ago may have none yet (the broker answers "does not host this topic-partition"), and
 * a producer or consumer started then would fail: wait for the election, up to `timeoutMs`.
 */
async function leadersElected(admin: Admin, specs: readonly TopicSpec[], timeoutMs = 20_000) {
  const started = Date.now();
  for (let wait = 100; ; wait = Math.min(wait * 2, 2000)) {
    try {
      const metadata = await admin.fetchTopicMetadata({ topics: specs.map((s) => s.topic) });
      if (metadata.topics.every((t) => t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0)))
        return metadata;
    } catch (error) {
      if (Date.now() - started > timeoutMs) throw error;
    }
    if (Date.now() - started > timeoutMs) throw new Error('kafka topics have no partition leaders yet');
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

/**
 * Creates the topics that do not exist yet and checks the partition counts of those that do.
 * Safe to run from several processes at once: a topic created meanwhile is not an error.
 */
export async function ensureTopics(
  kafka: Kafka,
  specs: readonly TopicSpec[],
  options: { replicationFactor: number; logger: Logger },
): Promise<{ created: string[] }> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = new Set(await admin.listTopics());
    const missing = specs.filter((spec) => !existing.has(spec.topic));
    if (missing.length > 0) {
      try {
        await admin.createTopics({
          waitForLeaders: true,
          topics: missing.map((spec) => ({
            topic: spec.topic,
            numPartitions: spec.numPartitions,
            replicationFactor: options.replicationFactor,
            configEntries: Object.entries(spec.configEntries ?? {}).map(([name, value]) => ({ name, value })),
          })),
        });
        options.logger.info('kafka topics created', { topics: missing.map((s) => s.topic) });
      } catch (error) {
        // Another process created them at the same moment, or a fresh broker does not show
        // them yet ("does not host this topic-partition"): the leaders check below waits for
        // them, bounded, and fails the start only if they never appear.
        options.logger.info('kafka topics: creation raced or not settled yet; waiting for their leaders', {
          topics: missing.map((s) => s.topic),
          error: (error as Error).message,
        });
      }
    }
    const metadata = await leadersElected(admin, specs);
    for (const topic of metadata.topics) {
      const wanted = specs.find((s) => s.topic === topic.name)?.numPartitions ?? 0;
      if (topic.partitions.length < wanted) {
        // Not grown automatically: that would move keys to other partitions and break ordering.
        options.logger.warn('kafka topic has fewer partitions than configured', {
          topic: topic.name,
          partitions: topic.partitions.length,
          wanted,
        });
      }
    }
    return { created: missing.map((s) => s.topic) };
  } finally {
    await admin.disconnect();
  }
}
