import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { loadConfig } from '@pipeline/config';
import { outboxKey, toOutboxEnvelopes, type TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { runConsumer } from '../consumer-runner';
import { topicRecords } from '../testing/topic-records';
import { createDestination } from '../destination-kinds';

const logger = createLogger({ service: 'warehouse-destination-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'warehouse-test', logger });

describe('delivery --destination warehouse (real Kafka and PostgreSQL)', () => {
  let db: ScratchDatabase;
  let client: Client;
  const topic = `test.warehouse.${randomUUID()}`;
  const topics = { source: topic, retry: `${topic}.retry`, deadLetter: `${topic}.dead-letter` };
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  const events: TrackingEvent[] = [
    {
      type: 'track',
      event: 'Order Completed',
      messageId: randomUUID(),
      anonymousId: 'a1',
      timestamp: '2026-03-01T10:00:00.000Z',
      properties: { total: 12.5 },
    },
    {
      type: 'identify',
      userId: 'u1',
      messageId: randomUUID(),
      anonymousId: 'a1',
      timestamp: '2026-03-01T10:00:01.000Z',
      traits: { plan: 'pro' },
    },
    {
      type: 'page',
      name: 'Home',
      messageId: randomUUID(),
      anonymousId: 'a2',
      timestamp: '2026-03-01T10:00:02.000Z',
    },
  ];

  beforeAll(async () => {
    db = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'warehouse destination',
    );
    client = new Client({ connectionString: db.url });
    await client.connect();
    await ensureTopics(
      kafka,
      [topic, topics.retry, topics.deadLetter].map((t) => ({ topic: t, numPartitions: 2 })),
      { replicationFactor: 1, logger },
    );
    const producer = createProducer(kafka);
    await producer.connect();
    const receipt = {
      v: 2 as const,
      accountId,
      writeKeyId: 'w',
      batchId: 'b',
      receivedAt: '2026-03-01T10:00:05.000Z',
      ip: '203.0.113.1',
      userAgent: 'UA',
    };
    const records = toOutboxEnvelopes(receipt, events);
    await producer.send({
      topic,
      acks: -1,
      messages: [
        ...records.map(({ envelope, json }) => ({ key: outboxKey(envelope), value: json })),
        { value: 'not an envelope' },
      ],
    });
    await producer.disconnect();
  });
  afterAll(async () => {
    await client.end();
    await db.drop();
  });

  async function consumeAll(groupId: string): Promise<void> {
    const destination = createDestination('warehouse', { logger, warehouseUrl: db.url });
    const running = await runConsumer({ kafka, destination, topics, groupId, logger, maxWaitTimeInMs: 100 });
    const started = Date.now();
    for (;;) {
      const admin = kafka.admin();
      await admin.connect();
      const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
      const ends = await admin.fetchTopicOffsets(topic);
      await admin.disconnect();
      // An empty partition has nothing to commit; the others must be committed to their end.
      const done = ends.every(
        (end) =>
          end.high === end.low ||
          Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1) >=
            Number(end.high),
      );
      if (done) break;
      if (Date.now() - started > 30_000) throw new Error('the warehouse consumer did not commit everything');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await running.stop();
  }

  it('loads every event into the account’s schema and commits, dead-lettering a record that is not an envelope', async () => {
    await consumeAll(`delivery.warehouse.${randomUUID()}`);
    const tracked = await client.query(
      `SELECT type, event, name, properties, context_ip FROM ${schema}.events ORDER BY timestamp`,
    );
    expect(tracked.rows).toEqual([
      {
        type: 'track',
        event: 'Order Completed',
        name: null,
        properties: { total: 12.5 },
        context_ip: '203.0.113.1',
      },
      { type: 'page', event: null, name: 'Home', properties: {}, context_ip: '203.0.113.1' },
    ]);
    expect((await client.query(`SELECT user_id, traits FROM ${schema}.users`)).rows).toEqual([
      { user_id: 'u1', traits: { plan: 'pro' } },
    ]);
    const deadLetters = await topicRecords(kafka, topics.deadLetter);
    expect(deadLetters).toHaveLength(1);
    expect(deadLetters[0]).toMatchObject({
      value: 'not an envelope',
      headers: {
        'x-delivery-target': 'warehouse',
        'x-delivery-permanent': 'true',
        'x-delivery-attempt': '1',
        'x-delivery-reason': expect.stringMatching(/^not_an_outbox_envelope/),
        'x-delivery-origin': expect.stringMatching(new RegExp(`^${topic}/\\d+/\\d+$`)),
      },
    });
  });

  it('adds nothing when the same records are delivered again (another group reads them all)', async () => {
    await consumeAll(`delivery.warehouse.${randomUUID()}`);
    expect((await client.query(`SELECT count(*)::int AS n FROM ${schema}.events`)).rows[0].n).toBe(2);
    expect((await client.query(`SELECT count(*)::int AS n FROM ${schema}.users`)).rows[0].n).toBe(1);
  });
});
