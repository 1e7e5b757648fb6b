import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { loadConfig } from '@pipeline/config';
import {
  deliveryHeaders,
  deliveryTopicsFor,
  retryGroupFor,
  runConsumer,
  createDestination,
  WarehouseWriter,
} from '@pipeline/destinations';
import { topicRecords, waitFor } from '@pipeline/destinations/testing';
import { outboxKey, toOutboxEnvelopes, type TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { readDeadLetters, replayDeadLetters } from './dead-letter-store';

// A dead-letter replay delivers old events late: identifies dead-lettered while the warehouse
// was away come back after the user's newer identify was stored. Through the real path (the
// dead-letter topic, `dead-letters replay`'s functions, the retry topic and the warehouse
// consumer), they must leave the user's row as it is.

const logger = createLogger({ service: 'dead-letter-replay-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'replay-test', logger });

describe('dead-letters replay into the warehouse (real Kafka and PostgreSQL)', () => {
  const prefix = `test.${randomUUID()}.`;
  const topics = deliveryTopicsFor('warehouse', prefix);
  const source = `${prefix}outbox`;
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  let db: ScratchDatabase;
  let client: Client;

  const receipt = (receivedAt: string) => ({
    v: 2 as const,
    accountId,
    writeKeyId: 'w',
    batchId: randomUUID(),
    receivedAt,
    ip: '203.0.113.1',
    userAgent: 'UA',
  });
  const identify = (
    messageId: string,
    timestamp: string,
    traits: Record<string, unknown>,
  ): TrackingEvent => ({
    type: 'identify',
    userId: 'u1',
    anonymousId: 'a1',
    messageId,
    timestamp,
    traits,
  });

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'dead letter replay');
    client = new Client({ connectionString: db.url });
    await client.connect();
    await ensureTopics(
      kafka,
      [
        { topic: source, numPartitions: 1 },
        { topic: topics.retry.topic, numPartitions: 2 },
        { topic: topics.deadLetter.topic, numPartitions: 1 },
      ],
      { replicationFactor: 1, logger },
    );
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  /** Every column of the user's row, as PostgreSQL's JSON of it. */
  const userRow = async () =>
    (await client.query<{ row: string }>(`SELECT to_jsonb(u)::text AS row FROM ${schema}.users u`)).rows.map(
      (r) => r.row,
    );

  it('replayed old identifies change nothing of the newer row', async () => {
    const producer = createProducer(kafka);
    await producer.connect();
    const groupId = `delivery.warehouse.${randomUUID()}`;
    // The schema first, so that the test can look at its users table before anything is stored.
    const writer = new WarehouseWriter(db.url);
    await writer.ensureSchema(schema);
    await writer.close();
    const destination = createDestination('warehouse', { logger, warehouseUrl: db.url });
    const running = await runConsumer({
      kafka,
      destination,
      topics: { source, retry: topics.retry.topic, deadLetter: topics.deadLetter.topic },
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    try {
      // The newest identify, delivered as usual.
      const [current] = toOutboxEnvelopes(receipt('2026-06-02T00:00:05.000Z'), [
        identify(randomUUID(), '2026-06-02T00:00:00.000Z', { plan: 'pro', seats: 5 }),
      ]);
      await producer.send({
        topic: source,
        acks: -1,
        messages: [{ key: outboxKey(current!.envelope), value: current!.json }],
      });
      await waitFor(async () => (await userRow()).length === 1, 30_000, 'the newer identify stored');
      const before = await userRow();
      expect(JSON.parse(before[0]!)).toMatchObject({
        timestamp: '2026-06-02T00:00:00+00:00',
        traits: { plan: 'pro', seats: 5 },
      });

      // Two older identifies, dead-lettered as the consumer dead-letters (same headers).
      const old = toOutboxEnvelopes(receipt('2026-06-01T00:00:05.000Z'), [
        identify(randomUUID(), '2026-06-01T00:00:00.000Z', { plan: 'free', seats: 1 }),
      ]).concat(
        toOutboxEnvelopes(receipt('2026-06-01T12:00:05.000Z'), [
          identify(randomUUID(), '2026-06-01T12:00:00.000Z', { plan: 'trial' }),
        ]),
      );
      await producer.send({
        topic: topics.deadLetter.topic,
        acks: -1,
        messages: old.map(({ envelope, json }, i) => ({
          key: outboxKey(envelope),
          value: json,
          headers: {
            [deliveryHeaders.destination]: 'warehouse',
            [deliveryHeaders.target]: 'warehouse',
            [deliveryHeaders.attempt]: '8',
            [deliveryHeaders.reason]: 'warehouse_unavailable: connection refused',
            [deliveryHeaders.permanent]: 'false',
            [deliveryHeaders.deadLetteredAt]: '2026-06-01T13:00:00.000Z',
            [deliveryHeaders.origin]: `${source}/0/${i}`,
          },
        })),
      });

      const letters = await readDeadLetters(kafka, 'warehouse', {}, prefix);
      expect(letters.map((l) => l.messageIds)).toEqual(
        old.map(({ envelope }) => [envelope.events[0]!.messageId]),
      );
      expect(await replayDeadLetters(producer, 'warehouse', letters, prefix)).toBe(2);

      // Done when the retry consumer committed past both replayed records.
      const admin = kafka.admin();
      await admin.connect();
      try {
        await waitFor(
          async () => {
            const ends = await admin.fetchTopicOffsets(topics.retry.topic);
            const [committed] = await admin.fetchOffsets({
              groupId: retryGroupFor(groupId),
              topics: [topics.retry.topic],
            });
            return ends.every(
              (end) =>
                end.high === end.low ||
                Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1) >=
                  Number(end.high),
            );
          },
          30_000,
          'the replayed records delivered',
        );
      } finally {
        await admin.disconnect();
      }
      expect(await userRow()).toEqual(before);
      // Delivered, not parked again: the retry topic holds the two replayed records only, and
      // the dead-letter topic the two letters.
      expect(await topicRecords(kafka, topics.retry.topic)).toHaveLength(2);
      expect(await topicRecords(kafka, topics.deadLetter.topic)).toHaveLength(2);
    } finally {
      await running.stop();
      await producer.disconnect();
    }
  }, 90_000);
});
