import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Kafka, Producer } from 'kafkajs';
import { loadConfig } from '@pipeline/config';
import {
  createDestination,
  deliveryTopicsFor,
  runConsumer,
  type RunningConsumer,
} from '@pipeline/destinations';
import type { OutboxEnvelope, TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { compilePlan, type PlanPolicy, type TrackingPlan } from '@pipeline/tracking-plans';
import { defaultDeadLetterLimits, type DeadLetterLimits } from '../dead-letters/dead-letter-limits';
import { DeadLetterIndexer } from '../dead-letters/dead-letter-index';
import { KafkaDeadLetterReplayer } from '../dead-letters/dead-letter-replayer';
import type { Harness, Tenant } from './harness';

const logger = createLogger({ service: 'quarantine-stack', stream: new PassThrough() });

/** Retention long enough for any test's events, and replays a test never runs out of. */
export const quarantineTestLimits: Pick<DeadLetterLimits, 'retentionDays' | 'replaysPerMinute'> = {
  ...defaultDeadLetterLimits,
  retentionDays: 3650,
  replaysPerMinute: 100,
};

/**
 * The delivery side of the quarantine on real Kafka and PostgreSQL, for tests: the warehouse
 * consumer (quarantining under each envelope's policy into its real dead-letter topic), the
 * dead-letter index and the replayer, reading an outbox topic of their own (`send` commits to
 * it as the door does) or ingestion's (`source`). Create it before the harness (the harness
 * takes `replayer`), then `start` it with the harness.
 */
export class QuarantineStack {
  readonly kafka: Kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
    clientId: 'quarantine-stack',
    logger,
  });
  readonly prefix = `test.${randomUUID()}.`;
  readonly outbox: string;
  /** Connects at the first replay: a harness holding it needs no broker until then. */
  readonly replayer = new KafkaDeadLetterReplayer(this.kafka, this.prefix);
  private producer: Producer | undefined;
  private indexer: DeadLetterIndexer | undefined;
  private consumer: RunningConsumer | undefined;

  constructor(options: { source?: string } = {}) {
    this.outbox = options.source ?? `${this.prefix}tracking.events.v2`;
  }

  /** Starts the consumer and the index; the consumer writes to `warehouseUrl`, the harness's database unless given. */
  async start(h: Harness, warehouseUrl = h.db.url): Promise<void> {
    const topics = deliveryTopicsFor('warehouse', this.prefix);
    await ensureTopics(
      this.kafka,
      [{ topic: this.outbox, numPartitions: 1 }, topics.retry, topics.deadLetter],
      {
        replicationFactor: 1,
        logger,
      },
    );
    this.producer = createProducer(this.kafka);
    await this.producer.connect();
    this.indexer = new DeadLetterIndexer({
      kafka: this.kafka,
      dataSource: h.db.dataSource,
      logger,
      kinds: ['warehouse'],
      topicPrefix: this.prefix,
      replicationFactor: 1,
      limits: quarantineTestLimits,
    });
    this.indexer.start();
    this.consumer = await runConsumer({
      kafka: this.kafka,
      destination: createDestination('warehouse', { logger, warehouseUrl }),
      topics: { source: this.outbox, retry: topics.retry.topic, deadLetter: topics.deadLetter.topic },
      groupId: `test-quarantine-${randomUUID()}`,
      logger,
      maxWaitTimeInMs: 100,
    });
  }

  /** Commits events to the outbox as the door does: checked against `plan` as `version`. */
  async send(
    tenant: Tenant,
    events: TrackingEvent[],
    held: { planId: string; version: number; plan: TrackingPlan; policy: PlanPolicy },
  ): Promise<void> {
    if (!this.producer) throw new Error('QuarantineStack.send before start');
    const compiled = compilePlan(held.plan, { planId: held.planId, version: held.version });
    const envelope: OutboxEnvelope = {
      v: 2,
      accountId: tenant.accountId,
      writeKeyId: `wk-${tenant.accountId}`,
      batchId: randomUUID(),
      receivedAt: new Date().toISOString(),
      ip: null,
      userAgent: null,
      events,
      plan: { planId: held.planId, version: held.version, policy: held.policy },
      verdicts: events.map((e) => ({ version: held.version, violations: compiled.validate(e) })),
    };
    await this.producer.send({
      topic: this.outbox,
      acks: -1,
      messages: [{ key: `${tenant.accountId}:${randomUUID()}`, value: JSON.stringify(envelope) }],
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
    await this.indexer?.stop();
    await this.producer?.disconnect();
    await this.replayer.close();
  }
}
