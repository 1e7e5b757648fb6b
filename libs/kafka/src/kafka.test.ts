import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { CompressionTypes, type Consumer, type Kafka } from 'kafkajs';
import { loadConfig } from '@pipeline/config';
import { createLogger } from '@pipeline/logger';
import {
  createKafka,
  createProducer,
  ensureTopics,
  kafkaConfigSchema,
  kafkaReachable,
  readTopicSnapshot,
} from './index';

// Smoke test against the real broker that tools/kafka/kafka.sh starts (tools/test.sh does).
const logger = createLogger({ service: 'kafka-test', stream: new PassThrough() });
const config = loadConfig(kafkaConfigSchema, process.env);
const kafka: Kafka = createKafka(config, { clientId: 'kafka-test', logger });

describe('Kafka (real broker)', () => {
  const topic = `test.smoke.${randomUUID()}`;
  let consumer: Consumer | undefined;

  beforeAll(async () => {
    if (!(await kafkaReachable(kafka, 5000))) {
      throw new Error(
        `No Kafka broker at ${config.KAFKA_BROKERS.join(',')}: start one with tools/kafka/kafka.sh start`,
      );
    }
  });

  afterAll(async () => {
    await consumer?.disconnect();
  });

  it('creates topics with explicit partition counts, idempotently', async () => {
    const first = await ensureTopics(kafka, [{ topic, numPartitions: 3 }], { replicationFactor: 1, logger });
    expect(first.created).toEqual([topic]);
    const second = await ensureTopics(kafka, [{ topic, numPartitions: 3 }], { replicationFactor: 1, logger });
    expect(second.created).toEqual([]);

    const admin = kafka.admin();
    await admin.connect();
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    await admin.disconnect();
    expect(metadata.topics[0]?.partitions).toHaveLength(3);
  });

  it('tolerates concurrent creation of the same topic from several processes', async () => {
    const shared = `test.race.${randomUUID()}`;
    const results = await Promise.all(
      [1, 2, 3].map(() =>
        ensureTopics(kafka, [{ topic: shared, numPartitions: 2 }], { replicationFactor: 1, logger }),
      ),
    );
    expect(results.flatMap((r) => r.created).length).toBeGreaterThanOrEqual(1);
  });

  it('produces with the idempotent producer and consumes every message back', async () => {
    const producer = createProducer(kafka);
    await producer.connect();
    const sent = Array.from({ length: 30 }, (_, i) => ({
      key: `account-${i % 4}`,
      value: JSON.stringify({ n: i }),
    }));
    const acks = await producer.send({ topic, acks: -1, messages: sent });
    await producer.disconnect();
    expect(acks.every((ack) => ack.errorCode === 0)).toBe(true);

    consumer = kafka.consumer({ groupId: `test-${randomUUID()}`, maxWaitTimeInMs: 100 });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    const received: { key: string; value: string; partition: number }[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`received ${received.length} of ${sent.length}`)),
        20000,
      );
      void consumer!.run({
        eachMessage: async ({ message, partition }) => {
          received.push({ key: message.key!.toString(), value: message.value!.toString(), partition });
          if (received.length === sent.length) {
            clearTimeout(timer);
            resolve();
          }
        },
      });
    });
    expect(received.map((m) => JSON.parse(m.value).n).sort((a, b) => a - b)).toEqual(sent.map((_, i) => i));
    // Same key, same partition: per-account ordering rests on this.
    for (const key of new Set(received.map((m) => m.key))) {
      expect(new Set(received.filter((m) => m.key === key).map((m) => m.partition)).size).toBe(1);
    }
  });

  it('reads the records a topic holds now, within an offset range, and leaves no consumer group behind', async () => {
    const topic = `test.snapshot.${randomUUID()}`;
    await ensureTopics(kafka, [{ topic, numPartitions: 2 }], { replicationFactor: 1, logger });
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: 6 }, (_, i) => ({ value: `v${i}`, partition: i % 2 })),
    });
    await producer.disconnect();
    const all = await readTopicSnapshot(kafka, topic);
    expect(all.map((r) => `${r.partition}/${r.offset}/${r.value?.toString()}`)).toEqual([
      '0/0/v0',
      '0/1/v2',
      '0/2/v4',
      '1/0/v1',
      '1/1/v3',
      '1/2/v5',
    ]);
    const middle = await readTopicSnapshot(kafka, topic, { from: 1n, to: 1n });
    expect(middle.map((r) => r.value?.toString())).toEqual(['v2', 'v3']);
    expect(await readTopicSnapshot(kafka, topic, { from: 5n })).toEqual([]);
    const admin = kafka.admin();
    await admin.connect();
    const groups = (await admin.listGroups()).groups.map((g) => g.groupId);
    await admin.disconnect();
    expect(groups.filter((g) => g.startsWith('snapshot-'))).toEqual([]);
  });

  it('reads back records a producer compressed with LZ4', async () => {
    const topic = `test.lz4.${randomUUID()}`;
    await ensureTopics(kafka, [{ topic, numPartitions: 1 }], { replicationFactor: 1, logger });
    const producer = createProducer(kafka);
    await producer.connect();
    const value = JSON.stringify({ events: Array.from({ length: 50 }, (_, i) => ({ event: 'Viewed', i })) });
    await producer.send({
      topic,
      acks: -1,
      compression: CompressionTypes.LZ4,
      messages: [{ key: 'k', value }],
    });
    await producer.disconnect();
    const [record, ...rest] = await readTopicSnapshot(kafka, topic);
    expect(rest).toEqual([]);
    expect(record?.value?.toString()).toBe(value);
    expect(record?.key?.toString()).toBe('k');
  });

  it('reports an unreachable broker as unreachable', async () => {
    const nowhere = createKafka(
      loadConfig(kafkaConfigSchema, { KAFKA_BROKERS: '127.0.0.1:1', KAFKA_CONNECTION_TIMEOUT_MS: '200' }),
      {
        clientId: 'nowhere',
        logger,
      },
    );
    expect(await kafkaReachable(nowhere, 1000)).toBe(false);
  });
});

describe('kafkaConfigSchema', () => {
  it('requires SASL credentials when a mechanism is set', () => {
    expect(() => loadConfig(kafkaConfigSchema, { KAFKA_SASL_MECHANISM: 'plain' })).toThrow(
      /KAFKA_SASL_USERNAME/,
    );
  });
});
