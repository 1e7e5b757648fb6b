import { randomUUID } from 'node:crypto';
import { loadConfig } from '@pipeline/config';
import { outboxKey, type OutboxEnvelope } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import {
  warehouseSchemaFor,
  type ReportedWarehouseStatus,
  type ResolvedWarehouse,
  type WarehouseConnection,
} from '@pipeline/tenancy';
import type { Producer } from 'kafkajs';
import { runConsumer, type RunningConsumer } from '../consumer-runner';
import { DeliveryMetrics } from '../delivery-metrics';
import { topicRecords, waitFor } from '../testing/topic-records';
import { guardedWarehousePools } from './postgres/postgres-engine';
import { WarehouseDestination } from './warehouse-destination';
import { ResolvingWarehouseDirectory } from './warehouse-directory';
import { WarehouseEngines } from './warehouse-engines';

// A customer-owned PostgreSQL that fights back, as in the security review of 2026-11-29: a
// trigger that traps query_canceled (so its statement_timeout never ends an insert), then one
// that answers every insert slowly with a data error. The platform's accounts share the
// consumer and every outbox partition with it; they keep loading within seconds, nothing is
// dead-lettered, and the customer's rows land once its server behaves.
const logger = createLogger({ service: 'customer-stall-test', format: 'json', level: 'warn' });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'customer-stall', logger });

const superuser = <T extends object>(server: TestCluster, sql: string, database = 'warehouse') =>
  server.query<T & Record<string, unknown>>(sql, [], database);

describe("a customer's warehouse that hangs or refuses slowly stalls no other account (real Kafka, two PostgreSQL servers)", () => {
  const clusters = useTestClusters();
  let platform: TestCluster;
  let hostile: TestCluster;
  const accounts = { p1: randomUUID(), p2: randomUUID(), h: randomUUID() };
  const sent = new Map<string, Set<string>>(Object.values(accounts).map((id) => [id, new Set<string>()]));
  const statuses: { warehouseId: string; status: ReportedWarehouseStatus }[] = [];
  const run = randomUUID();
  const topics = {
    source: `test.customer-stall.${run}`,
    retry: `test.customer-stall.${run}.retry`,
    deadLetter: `test.customer-stall.${run}.dead-letter`,
  };
  const budgetMs = 2_000;
  let producer: Producer;
  let running: RunningConsumer;
  let fatal: Error | undefined;
  let engines: WarehouseEngines;
  const hSchema = warehouseSchemaFor(accounts.h);

  beforeAll(async () => {
    platform = await clusters.start('stall-platform');
    hostile = await clusters.start('stall-customer');
    for (const server of [platform, hostile])
      await superuser(server, 'CREATE DATABASE warehouse', 'postgres');
    const connectionOf = (server: TestCluster, owner: 'platform' | 'customer'): WarehouseConnection => ({
      warehouseId: `wh-${owner}`,
      engine: 'postgres',
      host: '127.0.0.1',
      port: server.port,
      database: 'warehouse',
      user: 'postgres',
      password: '',
      tlsMode: 'disable',
      owner,
      maxConnections: 3,
    });
    const placed = (accountId: string, connection: WarehouseConnection): ResolvedWarehouse => ({
      placement: {
        warehouseId: connection.warehouseId,
        engine: 'postgres',
        schema: warehouseSchemaFor(accountId),
        epoch: 1,
      },
      connection,
    });
    const placements = new Map<string, ResolvedWarehouse>([
      [accounts.p1, placed(accounts.p1, connectionOf(platform, 'platform'))],
      [accounts.p2, placed(accounts.p2, connectionOf(platform, 'platform'))],
      [accounts.h, placed(accounts.h, connectionOf(hostile, 'customer'))],
    ]);
    await ensureTopics(
      kafka,
      [
        { topic: topics.source, numPartitions: 3 },
        { topic: topics.retry, numPartitions: 2 },
        { topic: topics.deadLetter, numPartitions: 1 },
      ],
      { replicationFactor: 1, logger },
    );
    producer = createProducer(kafka);
    await producer.connect();
    // Short limits so the test is quick: the server-side statement_timeout (1 s) is trapped,
    // so only the client's read deadline (1 s + 5 s) ends a hung statement.
    const timeouts = { statementTimeoutMs: 1_000, lockTimeoutMs: 1_000 };
    engines = WarehouseEngines.open(
      { processMaxConnections: 20, idleMs: 60_000 },
      {
        postgres: { timeouts, connect: guardedWarehousePools({ allowPrivateRanges: ['127.0.0.0/8'] }) },
        clickhouse: { timeouts },
      },
    );
    const destination = new WarehouseDestination({
      directory: new ResolvingWarehouseDirectory(
        (accountId) => Promise.resolve(placements.get(accountId) ?? null),
        { ttlMs: 60_000 },
        logger,
      ),
      engines,
      logger,
      reportStatus: (warehouseId, status) => {
        statuses.push({ warehouseId, status });
        return Promise.resolve();
      },
      breaker: { baseMs: 500, maxMs: 2_000, probeWaitMs: 500 },
      customerBudgetMs: budgetMs,
    });
    running = await runConsumer({
      kafka,
      destination,
      topics,
      groupId: `delivery.warehouse.${run}`,
      logger,
      metrics: new DeliveryMetrics(),
      maxWaitTimeInMs: 100,
      policy: { maxAttempts: 2, baseDelayMs: 200, maxDelayMs: 1000 },
      onFatal: (error) => (fatal = error),
    });
    await running.joined;
  }, 120_000);

  afterAll(async () => {
    await running?.stop();
    await producer?.disconnect();
    await engines?.close();
  });

  /**
   * One record of `count` events; a new anonymous id each time, so the account's records reach
   * every partition. Returns the first event's message id.
   */
  async function send(accountId: string, count = 1): Promise<string> {
    const ids = Array.from({ length: count }, () => randomUUID());
    const anonymousId = randomUUID();
    const envelope: OutboxEnvelope = {
      v: 2,
      accountId,
      writeKeyId: `wk-${accountId}`,
      batchId: randomUUID(),
      receivedAt: '2026-03-01T10:00:05.000Z',
      ip: null,
      userAgent: null,
      events: ids.map((messageId) => ({
        type: 'track',
        event: 'Viewed',
        messageId,
        anonymousId,
        timestamp: '2026-03-01T10:00:00.000Z',
        properties: {},
      })),
    };
    await producer.send({
      topic: topics.source,
      acks: -1,
      messages: [{ key: outboxKey(envelope), value: JSON.stringify(envelope) }],
    });
    for (const id of ids) sent.get(accountId)?.add(id);
    return ids[0] ?? '';
  }

  async function storedIds(server: TestCluster, accountId: string): Promise<Set<string>> {
    const schema = warehouseSchemaFor(accountId);
    const [exists] = await superuser<{ found: boolean }>(
      server,
      `SELECT to_regclass('${schema}.events') IS NOT NULL AS found`,
    );
    if (!exists?.found) return new Set();
    const rows = await superuser<{ message_id: string }>(server, `SELECT message_id FROM ${schema}.events`);
    return new Set(rows.map((r) => r.message_id));
  }

  const allStored = async (server: TestCluster, accountId: string) => {
    const stored = await storedIds(server, accountId);
    return [...(sent.get(accountId) ?? [])].every((id) => stored.has(id));
  };

  /**
   * While the customer's server misbehaves and its account keeps sending on every partition,
   * the platform accounts' markers land within 10 s each, several times over (the breaker's
   * probes included). Returns the lags.
   */
  async function platformLags(rounds: number): Promise<number[]> {
    const lags: number[] = [];
    for (let i = 0; i < rounds; i += 1) {
      // Five events a record: a refusal takes several slow writes to isolate one event, longer
      // than the budget, so the budget, not the split, decides.
      for (let j = 0; j < 6; j += 1) await send(accounts.h, 5);
      const sentAt = Date.now();
      const m1 = await send(accounts.p1);
      const m2 = await send(accounts.p2);
      await waitFor(
        async () =>
          (await storedIds(platform, accounts.p1)).has(m1) &&
          (await storedIds(platform, accounts.p2)).has(m2),
        10_000,
        'the platform accounts to load within 10 s',
      );
      lags.push(Date.now() - sentAt);
    }
    return lags;
  }

  /**
   * The customer fixes their server: drops the trigger. Our client closed the hung
   * connections, but their backends keep looping (PostgreSQL notices a lost client only when
   * it writes to it) and hold the table's lock, so they are ended first, as the customer would.
   */
  async function behave(trigger: string): Promise<void> {
    await waitFor(
      async () => {
        await superuser(
          hostile,
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'warehouse' AND pid <> pg_backend_pid()",
        );
        try {
          await superuser(hostile, `SET lock_timeout = 500; DROP TRIGGER ${trigger} ON ${hSchema}.events`);
          return true;
        } catch {
          return false;
        }
      },
      30_000,
      `the trigger ${trigger} dropped`,
    );
  }

  it('loads all three accounts while the customer server behaves', async () => {
    for (const accountId of Object.values(accounts)) await send(accountId);
    await waitFor(() => allStored(hostile, accounts.h), 30_000, "the customer's first row");
    await waitFor(() => allStored(platform, accounts.p1), 30_000, 'p1');
  }, 60_000);

  it("a trigger that traps statement_timeout: others load within seconds, the customer's rows are held, then land", async () => {
    await superuser(
      hostile,
      `CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE started timestamptz := clock_timestamp();
       BEGIN
         WHILE clock_timestamp() < started + interval '5 minutes' LOOP
           BEGIN PERFORM pg_sleep(3600); EXCEPTION WHEN query_canceled THEN NULL; END;
         END LOOP;
         RETURN NULL;
       END $$;
       CREATE TRIGGER stall BEFORE INSERT ON ${hSchema}.events FOR EACH STATEMENT EXECUTE FUNCTION stall();`,
    );
    const lags = await platformLags(5);
    process.stderr.write(`platform lag while the customer server hangs (ms): ${lags.join(', ')}\n`);
    expect(Math.max(...lags)).toBeLessThan(10_000);
    expect(statuses).toContainEqual({ warehouseId: 'wh-customer', status: 'unavailable' });
    await behave('stall');
    await waitFor(
      () => allStored(hostile, accounts.h),
      60_000,
      'every customer row once the trigger is gone',
    );
    expect(await topicRecords(kafka, topics.deadLetter)).toEqual([]);
    expect(fatal).toBeUndefined();
  }, 180_000);

  it('a server that answers every insert slowly with a data error: held, not split 2n-1 times, none dead-lettered', async () => {
    await superuser(
      hostile,
      `CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN PERFORM pg_sleep(0.7); RAISE EXCEPTION 'refused' USING ERRCODE = '22000'; END $$;
       CREATE TRIGGER refuse BEFORE INSERT ON ${hSchema}.events FOR EACH STATEMENT EXECUTE FUNCTION refuse();`,
    );
    const lags = await platformLags(5);
    process.stderr.write(`platform lag while the customer server refuses slowly (ms): ${lags.join(', ')}\n`);
    expect(Math.max(...lags)).toBeLessThan(10_000);
    await behave('refuse');
    await waitFor(() => allStored(hostile, accounts.h), 60_000, 'every customer row once it takes them');
    await waitFor(() => allStored(platform, accounts.p2), 30_000, 'every platform row');
    expect(await topicRecords(kafka, topics.deadLetter)).toEqual([]);
    expect(running.running()).toBe(true);
    expect(fatal).toBeUndefined();
  }, 180_000);
});
