import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { loadConfig } from '@pipeline/config';
import { WarehouseWriter } from '@pipeline/destinations';
import { startClickHouseWarehouse, waitFor } from '@pipeline/destinations/testing';
import {
  normalizeEvent,
  outboxKey,
  receiptContextOf,
  toOutboxEnvelopes,
  warehouseTables,
  type OutboxEnvelope,
  type TrackingEvent,
  type WarehouseTable,
} from '@pipeline/events';
import {
  createKafka,
  createProducer,
  ensureTopics,
  kafkaConfigSchema,
  pipelineTopics,
  prefixedTopic,
} from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';

// The built warehouse consumer killed with SIGKILL at random points of a load that mixes
// tracks, identifies arriving out of time order, group calls and aliases: once it has caught up,
// every table equals what one clean pass over the same records writes. Redelivered batches add
// nothing and a user's row does not depend on the order its identifies were loaded in. The same
// run against each engine: PostgreSQL (20 kills) and ClickHouse (12, a chdb test server: its
// consumer restarts cost more, and CI's budget is shared), its tables read once per message
// (FINAL) and through the views that fold users and groups.
const dist = path.join(__dirname, '../../dist');
const logger = createLogger({ service: 'warehouse-crash-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'warehouse-crash-test',
  logger,
});

/** A small deterministic generator, so that a failing run can be repeated from its seed. */
function randomFrom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The warehouse a crash run loads: the consumer's, and a clean pass's to compare with. */
interface CrashWarehouse {
  /** WAREHOUSE_URL for the consumer. */
  url: string;
  /** Events stored by the consumer, once per message id. */
  storedEvents(): Promise<number>;
  /** The clean pass: every record once, in the order it was published. */
  loadClean(published: readonly OutboxEnvelope[]): Promise<void>;
  /** Every row of a table, in key order, of the consumer's load or of the clean pass. */
  rows(load: 'crashed' | 'clean', table: WarehouseTable): Promise<unknown[]>;
  /** What else the engine must hold once the load is complete (ClickHouse: no second copy). */
  checkComplete(tracks: number): Promise<void>;
  close(): Promise<void>;
}

const keyOf = (table: string) =>
  table === 'users' ? 'user_id' : table === 'groups' ? 'group_id' : 'message_id';

/** Two scratch databases of the test PostgreSQL: the consumer's and the clean pass's. */
async function postgresWarehouse(schema: string): Promise<CrashWarehouse> {
  const server = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const crashed: ScratchDatabase = await createScratchDatabase(server, 'warehouse crash');
  const clean: ScratchDatabase = await createScratchDatabase(server, 'warehouse clean pass');
  const client = new Client({ connectionString: crashed.url });
  await client.connect();
  // Every row of a table in key order, every column as text.
  const tableRows = async (url: string, table: string): Promise<string[]> => {
    const reader = new Client({ connectionString: url });
    await reader.connect();
    try {
      const { rows } = await reader.query<{ row: string }>(
        `SELECT to_jsonb(t)::text AS row FROM ${schema}.${table} t ORDER BY ${keyOf(table)}`,
      );
      return rows.map((r) => r.row);
    } finally {
      await reader.end();
    }
  };
  return {
    url: crashed.url,
    storedEvents: async () => {
      try {
        const { rows } = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.events`);
        return rows[0]?.n ?? 0;
      } catch (error) {
        const code = (error as { code?: string }).code;
        if (code === '42P01' || code === '3F000') return 0;
        throw error;
      }
    },
    loadClean: async (published) => {
      const writer = new WarehouseWriter(clean.url);
      try {
        for (const envelope of published) {
          const receipt = receiptContextOf(envelope);
          await writer.write(
            schema,
            envelope.events.map((event) => normalizeEvent(event, receipt)),
          );
        }
      } finally {
        await writer.close();
      }
    },
    rows: (load, table) => tableRows(load === 'crashed' ? crashed.url : clean.url, table),
    checkComplete: async () => undefined,
    close: async () => {
      await client.end();
      await crashed.drop();
      await clean.drop();
    },
  };
}

/** One ClickHouse test server: the consumer loads the account's database, the clean pass another. */
async function clickhouseWarehouse(schema: string): Promise<CrashWarehouse> {
  const warehouse = await startClickHouseWarehouse();
  const cleanSchema = `${schema}_clean`;
  return {
    url: warehouse.url,
    storedEvents: () => warehouse.count(schema, 'events', true),
    loadClean: async (published) => {
      const account = { accountId: 'clean-pass', schema: cleanSchema };
      for (const envelope of published) {
        const receipt = receiptContextOf(envelope);
        await warehouse.engine.writeRows(
          account,
          envelope.events.map((event) => normalizeEvent(event, receipt)),
        );
      }
    },
    rows: (load, table) => warehouse.tableRows(load === 'crashed' ? schema : cleanSchema, table),
    // A batch loaded again after a kill was dropped by its insert token or its stored ids: no
    // second copy of an event is stored, even before a merge.
    checkComplete: async (tracks) => {
      expect(await warehouse.count(schema, 'events', false)).toBe(tracks);
    },
    close: () => warehouse.destroy(),
  };
}

const engines = {
  PostgreSQL: { engine: 'PostgreSQL', kills: 20, open: postgresWarehouse },
  ClickHouse: { engine: 'ClickHouse', kills: 12, open: clickhouseWarehouse },
} as const;

/**
 * The crash run against one engine, each engine's a test file of its own
 * (warehouse-crash-postgres, warehouse-crash-clickhouse), so either can be run alone.
 */
export function warehouseCrashSuite(name: keyof typeof engines): void {
  const { engine, kills, open } = engines[name];
  describe(`delivery --destination warehouse killed at ${kills} random points (real Kafka and ${engine})`, () => {
    crashRun(kills, open);
  });
}

function crashRun(kills: number, open: (schema: string) => Promise<CrashWarehouse>): void {
  const seed = Number(process.env.CRASH_TEST_SEED ?? Date.now() % 2 ** 31);
  const random = randomFrom(seed);
  const prefix = `test-${randomUUID().slice(0, 8)}.`;
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix).topic;
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  const httpPort = 20000 + Math.floor(Math.random() * 10000);
  let warehouse: CrashWarehouse;
  let consumer: ChildProcess | undefined;
  const published: OutboxEnvelope[] = [];

  const startConsumer = () => {
    consumer = spawn(process.execPath, [path.join(dist, 'main.js'), '--destination', 'warehouse'], {
      env: {
        ...process.env,
        KAFKA_TOPIC_PREFIX: prefix,
        WAREHOUSE_URL: warehouse.url,
        DELIVERY_HTTP_PORT: String(httpPort),
        DELIVERY_HTTP_HOST: '127.0.0.1',
        DELIVERY_SESSION_TIMEOUT_MS: '6000',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    return consumer;
  };

  const stored = () => warehouse.storedEvents();

  /** One record of 20 events: tracks, and identifies, group calls and aliases of a few ids. */
  const record = (n: number): TrackingEvent[] => {
    const base = Date.UTC(2026, 5, 1);
    return Array.from({ length: 20 }, (_, i): TrackingEvent => {
      const user = `user-${Math.floor(random() * 6)}`;
      // Event times are spread over a month and drawn at random, so later records often carry
      // older identifies: what arrives late must not roll a user back.
      const timestamp = new Date(base + Math.floor(random() * 30 * 86_400_000)).toISOString();
      const common = { messageId: randomUUID(), anonymousId: `anon-${n}-${i}`, timestamp };
      const pick = random();
      if (pick < 0.3)
        return {
          ...common,
          type: 'identify',
          userId: user,
          traits: { [`k${Math.floor(random() * 5)}`]: `${n}-${i}`, plan: random() < 0.5 ? 'free' : 'pro' },
        };
      if (pick < 0.4)
        return {
          ...common,
          type: 'group',
          groupId: `group-${Math.floor(random() * 3)}`,
          traits: { seats: Math.floor(random() * 100) },
        };
      if (pick < 0.45) return { ...common, type: 'alias', userId: user, previousId: `anon-${n}-${i}` };
      return { ...common, type: 'track', event: 'Crash Load', properties: { n, i } };
    });
  };

  const publish = async (
    producer: ReturnType<typeof createProducer>,
    records: number,
    partition?: number,
  ) => {
    for (let r = 0; r < records; r += 1) {
      const envelopes = toOutboxEnvelopes(
        {
          v: 2,
          accountId,
          writeKeyId: randomUUID(),
          batchId: randomUUID(),
          receivedAt: new Date().toISOString(),
          ip: '203.0.113.9',
          userAgent: 'crash-test',
        },
        record(published.length),
      );
      await producer.send({
        topic: outbox,
        acks: -1,
        messages: envelopes.map(({ envelope, json }) => ({
          key: outboxKey(envelope),
          value: json,
          ...(partition === undefined ? {} : { partition }),
        })),
      });
      published.push(...envelopes.map(({ envelope }) => envelope));
    }
  };

  beforeAll(async () => {
    if (!existsSync(path.join(dist, 'main.js')))
      throw new Error('build apps/delivery first: pnpm exec nx build delivery');
    warehouse = await open(schema);
    await ensureTopics(kafka, [prefixedTopic(pipelineTopics.trackingEvents, prefix)], {
      replicationFactor: 1,
      logger,
    });
  }, 60_000);
  afterAll(async () => {
    consumer?.kill('SIGKILL');
    await warehouse?.close();
  }, 60_000);

  it(`ends with the tables of one clean pass (seed ${seed})`, async () => {
    const producer = createProducer(kafka);
    await producer.connect();
    await publish(producer, 50);
    for (let k = 0; k < kills; k += 1) {
      const before = await stored();
      const running = startConsumer();
      // More records while it runs, so each kill lands in the middle of a load.
      const loading = publish(producer, 10);
      await waitFor(async () => (await stored()) > before, 60_000, `rows after restart ${k + 1}`);
      await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 400)));
      running.kill('SIGKILL');
      await new Promise((resolve) => running.once('exit', resolve));
      await loading;
    }
    // The last consumer runs to the end; a marker record at the end of every partition proves
    // that nothing before it is still coming (a partition is loaded in order).
    startConsumer();
    const admin = kafka.admin();
    await admin.connect();
    const [metadata] = (await admin.fetchTopicMetadata({ topics: [outbox] })).topics;
    await admin.disconnect();
    const partitions = (metadata?.partitions ?? []).map((p) => p.partitionId);
    expect(partitions.length).toBeGreaterThan(0);
    for (const partition of partitions) await publish(producer, 1, partition);
    await producer.disconnect();
    const events = published.flatMap((envelope) => envelope.events);
    const tracks = events.filter((e) => e.type === 'track').length;
    await waitFor(async () => (await stored()) === tracks, 180_000, 'every acknowledged event');

    await warehouse.checkComplete(tracks);

    await warehouse.loadClean(published);
    for (const table of Object.keys(warehouseTables) as WarehouseTable[]) {
      const expected = await warehouse.rows('clean', table);
      expect(expected.length).toBeGreaterThan(0);
      expect(await warehouse.rows('crashed', table)).toEqual(expected);
    }
    expect(events.filter((e) => e.type === 'identify').length).toBeGreaterThan(100);
  }, 600_000);
}
