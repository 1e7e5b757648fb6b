import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { loadConfig } from '@pipeline/config';
import { outboxKey, type OutboxEnvelope } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { runConsumer, type RunningConsumer } from '../consumer-runner';
import { DeliveryMetrics } from '../delivery-metrics';
import { topicRecords, waitFor } from '../testing/topic-records';
import { createDestination } from '../destination-kinds';

// Records written straight into the outbox, past the door: good events of two accounts mixed
// with every kind of poison that used to stall a partition (or the whole consumer). The good
// ones are stored, each bad one is dead-lettered with its reason and origin, and the consumer
// keeps running with nothing left uncommitted.
const logger = createLogger({ service: 'warehouse-poison-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'warehouse-poison',
  logger,
});

const accountA = randomUUID();
const accountB = randomUUID();
const receipt = (accountId: string, extra: Partial<OutboxEnvelope> = {}) => ({
  v: 2 as const,
  accountId,
  writeKeyId: `wk-${accountId}`,
  batchId: randomUUID(),
  receivedAt: '2026-03-01T10:00:05.000Z',
  ip: '203.0.113.1',
  userAgent: 'UA',
  ...extra,
});
const track = (name: string, extra: Record<string, unknown> = {}) => ({
  type: 'track',
  event: name,
  messageId: randomUUID(),
  anonymousId: 'anon',
  timestamp: '2026-03-01T10:00:00.000Z',
  ...extra,
});

// Written as text: JSON.stringify itself cannot serialize it.
const deepRecord = JSON.stringify({
  ...receipt(accountA),
  events: [track('deep', { properties: { deep: 'DEEP' } })],
}).replace('"DEEP"', `${'['.repeat(20_000)}"bottom"${']'.repeat(20_000)}`);

/** Each poison kind: the event (or raw record), and the reason its dead letter must give. */
const poisons: { kind: string; record: string; reason: RegExp }[] = [
  {
    kind: 'NUL in a property value',
    record: JSON.stringify({
      ...receipt(accountA),
      events: [track('nul value', { properties: { note: 'a\u0000b' } })],
    }),
    reason: /^data_error: 22P05 /,
  },
  {
    kind: 'NUL in the event name',
    record: JSON.stringify({ ...receipt(accountB), events: [track('sign\u0000up')] }),
    reason: /^data_error: 22021 /,
  },
  {
    kind: 'an unpaired surrogate in a property key',
    record: JSON.stringify({
      ...receipt(accountA),
      events: [track('surrogate', { properties: { ['k\uD800']: 1 } })],
    }),
    reason: /^data_error: 22P02 /,
  },
  {
    kind: 'an impossible batch sentAt',
    record: JSON.stringify({
      ...receipt(accountB, { batchSentAt: '2024-13-01T99:00:00Z' }),
      events: [track('bad sentAt')],
    }),
    reason: /^unstorable_event: sentAt is not an accepted date-time: 2024-13-01T99:00:00Z$/,
  },
  {
    kind: 'an impossible timestamp',
    record: JSON.stringify({
      ...receipt(accountA),
      events: [track('bad timestamp', { timestamp: '2024-02-30T10:00:00Z' })],
    }),
    reason: /^unstorable_event: timestamp is not an accepted date-time/,
  },
  {
    kind: 'a year PostgreSQL has not',
    record: JSON.stringify({
      ...receipt(accountA),
      events: [track('year 0', { timestamp: '0000-06-01T00:00:00Z' })],
    }),
    reason: /^unstorable_event: timestamp/,
  },
  {
    kind: 'a screen width past a 32-bit integer',
    record: JSON.stringify({
      ...receipt(accountB),
      events: [track('wide', { context: { screen: { width: 1e12 } } })],
    }),
    reason: /^data_error: 22003 /,
  },
  {
    kind: 'no messageId',
    record: JSON.stringify({ ...receipt(accountA), events: [track('no id', { messageId: null })] }),
    reason: /^data_error: 23502 /,
  },
  {
    kind: 'an event that is not an object',
    record: JSON.stringify({ ...receipt(accountB), events: [null] }),
    reason: /^unstorable_event: /,
  },
  {
    kind: 'a value nested 20,000 deep',
    record: deepRecord,
    reason: /^data_error: 22000 value cannot be serialized as JSON/,
  },
  {
    kind: 'a record that is not an envelope',
    record: 'not json at all',
    reason: /^not_an_outbox_envelope/,
  },
  {
    kind: 'an envelope whose account id cannot name a schema',
    record: JSON.stringify({ ...receipt('x"; DROP SCHEMA public; --'), events: [track('injected')] }),
    reason: /^not_an_outbox_envelope/,
  },
];

describe('poison records in the outbox (real Kafka and PostgreSQL)', () => {
  let db: ScratchDatabase;
  let client: Client;
  let running: RunningConsumer;
  const metrics = new DeliveryMetrics();
  const topic = `test.poison.${randomUUID()}`;
  const topics = { source: topic, retry: `${topic}.retry`, deadLetter: `${topic}.dead-letter` };
  const groupId = `delivery.warehouse.${randomUUID()}`;
  const good = {
    a: [track('A first'), track('A leap second', { timestamp: '2016-12-31T23:59:60Z' }), track('A last')],
    b: [track('B first'), track('B last', { properties: { plan: 'pro', ['__proto__']: 'kept' } })],
  };
  // A good event shares its record with a poisoned one: only the poisoned event is dead-lettered.
  const mixed = {
    good: track('A beside poison'),
    bad: track('A poison beside', { properties: { x: '\u0000' } }),
  };
  let fatal: Error | undefined;

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'warehouse poison');
    client = new Client({ connectionString: db.url });
    await client.connect();
    await ensureTopics(
      kafka,
      [topic, topics.retry, topics.deadLetter].map((t) => ({ topic: t, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    // One partition: every poison sits between good records of both accounts, in one order.
    const envelope = (accountId: string, events: unknown[]) => {
      const value = { ...receipt(accountId), events } as OutboxEnvelope;
      return { key: outboxKey(value), value: JSON.stringify(value) };
    };
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: [
        envelope(accountA, [good.a[0]]),
        envelope(accountB, [good.b[0]]),
        ...poisons.slice(0, 6).map((p) => ({ key: 'p', value: p.record })),
        envelope(accountA, [good.a[1]]),
        envelope(accountA, [mixed.good, mixed.bad]),
        ...poisons.slice(6).map((p) => ({ key: 'p', value: p.record })),
        envelope(accountA, [good.a[2]]),
        envelope(accountB, [good.b[1]]),
      ],
    });
    await producer.disconnect();
    const destination = createDestination('warehouse', { logger, warehouseUrl: db.url });
    running = await runConsumer({
      kafka,
      destination,
      topics,
      groupId,
      logger,
      metrics,
      maxWaitTimeInMs: 100,
      onFatal: (error) => (fatal = error),
    });
  });
  afterAll(async () => {
    await running.stop();
    await client.end();
    await db.drop();
  });

  const lag = async () => {
    const admin = kafka.admin();
    await admin.connect();
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const [end] = await admin.fetchTopicOffsets(topic);
    await admin.disconnect();
    return Number(end?.high) - Number(committed?.partitions[0]?.offset ?? 0);
  };

  it('stores every good event, dead-letters each bad one with its reason and origin, and keeps running', async () => {
    await waitFor(async () => (await lag()) === 0, 60_000, 'the consumer to commit the whole outbox');
    expect(fatal).toBeUndefined();
    expect(running.running()).toBe(true);

    const names = async (accountId: string) =>
      (
        await client.query<{ event: string; timestamp: Date; properties: unknown }>(
          `SELECT event, timestamp, properties FROM ${warehouseSchemaFor(accountId)}.events ORDER BY event`,
        )
      ).rows;
    const rowsA = await names(accountA);
    expect(rowsA.map((r) => r.event)).toEqual(['A beside poison', 'A first', 'A last', 'A leap second']);
    // The leap second is stored as PostgreSQL reads one: the first instant of the next day.
    expect(rowsA.find((r) => r.event === 'A leap second')?.timestamp.toISOString()).toBe(
      '2017-01-01T00:00:00.000Z',
    );
    const rowsB = await names(accountB);
    expect(rowsB.map((r) => r.event)).toEqual(['B first', 'B last']);
    expect(JSON.stringify(rowsB[1]?.properties)).toBe(JSON.stringify({ plan: 'pro', ['__proto__']: 'kept' }));

    const deadLetters = await topicRecords(kafka, topics.deadLetter);
    expect(deadLetters).toHaveLength(poisons.length + 1);
    for (const poison of [...poisons.slice(0, 6), null, ...poisons.slice(6)]) {
      // A record of one bad event is dead-lettered as it was written.
      const letter = poison
        ? deadLetters.find((d) => d.value === poison.record)
        : deadLetters.find((d) => d.value.includes(mixed.bad.messageId));
      const what = poison?.kind ?? 'the poisoned event of a mixed record';
      expect({ what, found: letter !== undefined }).toEqual({ what, found: true });
      expect(letter?.headers).toMatchObject({
        'x-delivery-target': 'warehouse',
        'x-delivery-permanent': 'true',
        'x-delivery-attempt': '1',
        'x-delivery-origin': expect.stringMatching(new RegExp(`^${topic}/0/\\d+$`)),
      });
      expect({ what, reason: letter?.headers['x-delivery-reason'] }).toEqual({
        what,
        reason: expect.stringMatching(poison?.reason ?? /^data_error: 22P05 /),
      });
    }
    // The mixed record's dead letter holds only its poisoned event.
    const mixedLetter = deadLetters.find((d) => d.value.includes(mixed.bad.messageId));
    expect((JSON.parse(mixedLetter?.value ?? '{}') as OutboxEnvelope).events.map((e) => e.messageId)).toEqual(
      [mixed.bad.messageId],
    );

    const text = await metrics.text();
    expect(text).toMatch(
      /pipeline_delivery_records_dead_lettered_total\{destination="warehouse",reason="data_error"\} 7/,
    );
    expect(text).toMatch(
      /pipeline_delivery_records_dead_lettered_total\{destination="warehouse",reason="unstorable_event"\} 4/,
    );
    expect(text).toMatch(
      /pipeline_delivery_records_dead_lettered_total\{destination="warehouse",reason="not_an_outbox_envelope"\} 2/,
    );
  }, 90_000);
});
