import type { Admin, Kafka } from 'kafkajs';
import { consumerGroupFor, deliveryTopicsFor, retryGroupFor } from '@pipeline/destinations';
import { pipelineTopics, prefixedTopic } from '@pipeline/kafka';

/** Per topic, per partition, the offset the next record written there gets (the high-water mark). */
export type OffsetMarks = Record<string, Record<string, string>>;

/**
 * Whether a group has passed the marks of one topic: on each partition its committed offset (the
 * next one it reads; -1 when it has committed none, which counts from the partition's first
 * record still kept, as consumerGroupLag does) is at or past the mark.
 */
export function passedMarks(
  marks: Readonly<Record<string, string>>,
  committed: ReadonlyMap<number, bigint>,
  lows: ReadonlyMap<number, bigint>,
): boolean {
  return Object.entries(marks).every(([partition, mark]) => {
    const at = committed.get(Number(partition)) ?? -1n;
    const position = at >= 0n ? at : (lows.get(Number(partition)) ?? 0n);
    return position >= BigInt(mark);
  });
}

/**
 * The fence of a regulation (docs/privacy.md, "The fence"): no vendor deletion is sent, and no
 * warehouse erased, while an event received before the cut-off could still be delivered there
 * afterwards. When the regulation has taken effect everywhere (the tenant-change bound after the
 * answer), it records the high-water marks of the outbox and of each kind's retry topic; a target
 * of a kind waits until that kind's consumer groups have committed past them. Whatever comes
 * later is dropped by the consumers themselves.
 */
export class RegulationFence {
  private admin: Admin | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly prefix: string,
  ) {}

  private async connected(): Promise<Admin> {
    if (!this.admin) {
      const admin = this.kafka.admin();
      await admin.connect();
      this.admin = admin;
    }
    return this.admin;
  }

  private outbox(): string {
    return prefixedTopic(pipelineTopics.trackingEvents, this.prefix).topic;
  }

  private retryTopic(kind: string): string {
    return deliveryTopicsFor(kind, this.prefix).retry.topic;
  }

  /** The marks of the outbox and of the retry topics of `kinds` (a retry topic not made yet has none). */
  async record(kinds: readonly string[]): Promise<OffsetMarks> {
    const admin = await this.connected();
    const existing = new Set(await admin.listTopics());
    const marks: OffsetMarks = {};
    for (const topic of [this.outbox(), ...kinds.map((kind) => this.retryTopic(kind))]) {
      if (!existing.has(topic)) continue;
      marks[topic] = Object.fromEntries(
        (await admin.fetchTopicOffsets(topic)).map((p) => [String(p.partition), p.high]),
      );
    }
    return marks;
  }

  /** Whether the kind's outbox and retry groups have committed past the marks. */
  async passed(kind: string, marks: OffsetMarks): Promise<boolean> {
    const group = consumerGroupFor(kind, this.prefix);
    const checks: [string, string][] = [
      [this.outbox(), group],
      [this.retryTopic(kind), retryGroupFor(group)],
    ];
    const admin = await this.connected();
    for (const [topic, groupId] of checks) {
      const topicMarks = marks[topic];
      if (!topicMarks) continue;
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const lows = new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.low)]));
      const at = new Map((committed?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
      if (!passedMarks(topicMarks, at, lows)) return false;
    }
    return true;
  }

  async close(): Promise<void> {
    await this.admin?.disconnect();
    this.admin = undefined;
  }
}
