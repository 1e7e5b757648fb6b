import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { outboxKey, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
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
import { parsePrometheusText, sampleSum } from '../testing/prometheus-text';
import { topicRecords, waitFor } from '../testing/topic-records';
import { WarehouseDestination } from './warehouse-destination';
import { ResolvingWarehouseDirectory } from './warehouse-directory';
import { WarehouseEngines } from './warehouse-engines';
import { defaultWarehouseTimeouts } from './warehouse-pool';

// Three PostgreSQL servers, accounts placed on each. Every account's rows land on its own
// server only; one server stopped mid-load, or refusing the consumer's login, holds back only
// its own accounts, whose records wait in the retry topic (never dead-lettered) and land once
// it is back; the consumer never exits, and its log never shows a warehouse password.
const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk: Buffer) => logLines.push(chunk.toString('utf8')));
const logger = createLogger({
  service: 'warehouse-isolation-test',
  format: 'json',
  level: 'debug',
  stream: logStream,
});
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'warehouse-isolation',
  logger,
});

// Characters a URL must encode, so that an encoded copy in a message would be caught too.
const password = `p@ss/${randomUUID()}:w0rd?%`;
const names = ['a', 'b', 'c'] as const;
type Name = (typeof names)[number];

const event = (name: string): TrackingEvent => ({
  type: 'track',
  event: name,
  messageId: randomUUID(),
  anonymousId: 'anon',
  timestamp: '2026-03-01T10:00:00.000Z',
  properties: { n: name },
});

const superuserQuery = <T extends object>(server: TestCluster, sql: string, database = 'warehouse') =>
  server.query<T & Record<string, unknown>>(sql, [], database);

describe('a warehouse per account, each isolated from the others (real Kafka, three PostgreSQL servers)', () => {
  const clusters = useTestClusters();
  const servers = {} as Record<Name, TestCluster>;
  const connections = {} as Record<Name, WarehouseConnection>;
  // Two accounts on server a, one on each of b and c.
  const accounts = { a: randomUUID(), a2: randomUUID(), b: randomUUID(), c: randomUUID() };
  const home: Record<keyof typeof accounts, Name> = { a: 'a', a2: 'a', b: 'b', c: 'c' };
  const sent = new Map<string, Set<string>>(Object.values(accounts).map((id) => [id, new Set<string>()]));
  const statuses: { warehouseId: string; status: ReportedWarehouseStatus; detail: string | null }[] = [];
  const run = randomUUID();
  const topics = {
    source: `test.warehouse-isolation.${run}`,
    retry: `test.warehouse-isolation.${run}.retry`,
    deadLetter: `test.warehouse-isolation.${run}.dead-letter`,
  };
  const metrics = new DeliveryMetrics();
  let producer: Producer;
  let running: RunningConsumer;
  let fatal: Error | undefined;

  beforeAll(async () => {
    for (const name of names) {
      const server = await clusters.start(`warehouse-${name}`, { passwordLogins: true });
      servers[name] = server;
      await superuserQuery(
        server,
        `CREATE ROLE loader LOGIN PASSWORD '${password.replace(/'/g, "''")}'`,
        'postgres',
      );
      await superuserQuery(server, 'CREATE DATABASE warehouse OWNER loader', 'postgres');
      connections[name] = {
        warehouseId: `wh-${name}`,
        engine: 'postgres',
        host: '127.0.0.1',
        port: server.port,
        database: 'warehouse',
        user: 'loader',
        password,
        tlsMode: 'disable',
        owner: 'platform',
        maxConnections: 3,
      };
    }
    const placements = new Map<string, ResolvedWarehouse>(
      Object.entries(accounts).map(([key, accountId]) => {
        const connection = connections[home[key as keyof typeof accounts]];
        return [
          accountId,
          {
            placement: {
              warehouseId: connection.warehouseId,
              engine: 'postgres',
              schema: warehouseSchemaFor(accountId),
              epoch: 1,
            },
            connection,
          },
        ];
      }),
    );
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
    const destination = new WarehouseDestination({
      // The control plane's resolve endpoint, answered from the placements above.
      directory: new ResolvingWarehouseDirectory(
        (accountId) => Promise.resolve(placements.get(accountId) ?? null),
        { ttlMs: 60_000 },
        logger,
      ),
      engines: WarehouseEngines.open(
        { processMaxConnections: 20, idleMs: 60_000 },
        {
          postgres: { timeouts: defaultWarehouseTimeouts },
          clickhouse: { timeouts: defaultWarehouseTimeouts },
        },
      ),
      logger,
      reportStatus: (warehouseId, status, detail) => {
        statuses.push({ warehouseId, status, detail });
        return Promise.resolve();
      },
      breaker: { baseMs: 300, maxMs: 2000, probeWaitMs: 200 },
    });
    running = await runConsumer({
      kafka,
      destination,
      topics,
      groupId: `delivery.warehouse.${run}`,
      logger,
      metrics,
      maxWaitTimeInMs: 100,
      // Two attempts: a held record is tried far more often than that, and never dead-lettered.
      policy: { maxAttempts: 2, baseDelayMs: 200, maxDelayMs: 1000 },
      onFatal: (error) => (fatal = error),
    });
    await running.joined;
  }, 120_000);

  afterAll(async () => {
    await running?.stop();
    await producer?.disconnect();
  });

  /** Sends one record of `count` events for the account; returns when Kafka has it. */
  async function send(accountId: string, count = 1): Promise<string[]> {
    const events = Array.from({ length: count }, (_, i) => event(`e${i}`));
    const envelope: OutboxEnvelope = {
      v: 2,
      accountId,
      writeKeyId: `wk-${accountId}`,
      batchId: randomUUID(),
      receivedAt: '2026-03-01T10:00:05.000Z',
      ip: null,
      userAgent: null,
      events,
    };
    await producer.send({
      topic: topics.source,
      acks: -1,
      messages: [{ key: outboxKey(envelope), value: JSON.stringify(envelope) }],
    });
    const ids = events.map((e) => e.messageId);
    for (const id of ids) sent.get(accountId)?.add(id);
    return ids;
  }

  const serverOf = (accountId: string): TestCluster => {
    const key = (Object.keys(accounts) as (keyof typeof accounts)[]).find((k) => accounts[k] === accountId);
    return servers[home[key as keyof typeof accounts]];
  };

  /** The message ids stored for the account on a server ([] while its table does not exist). */
  async function storedIds(server: TestCluster, accountId: string): Promise<string[]> {
    const schema = warehouseSchemaFor(accountId);
    const [exists] = await superuserQuery<{ found: boolean }>(
      server,
      `SELECT to_regclass('${schema}.events') IS NOT NULL AS found`,
    );
    if (!exists?.found) return [];
    const rows = await superuserQuery<{ message_id: string }>(
      server,
      `SELECT message_id FROM ${schema}.events`,
    );
    return rows.map((r) => r.message_id).sort();
  }

  const allStored = async (accountId: string) =>
    (await storedIds(serverOf(accountId), accountId)).length === sent.get(accountId)?.size;

  const gauges = async () => parsePrometheusText(await metrics.text());

  it("routes: each account's rows land on its own server, and only there", async () => {
    for (const accountId of Object.values(accounts)) await send(accountId, 3);
    for (const accountId of Object.values(accounts))
      await waitFor(() => allStored(accountId), 30_000, `the rows of ${accountId}`);
    for (const accountId of Object.values(accounts))
      expect(await storedIds(serverOf(accountId), accountId)).toEqual(
        [...(sent.get(accountId) ?? [])].sort(),
      );
    const schemasOn = async (name: Name) =>
      (
        await superuserQuery<{ nspname: string }>(
          servers[name],
          "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'account_%' ORDER BY nspname",
        )
      ).map((r) => r.nspname);
    expect(await schemasOn('a')).toEqual(
      [warehouseSchemaFor(accounts.a), warehouseSchemaFor(accounts.a2)].sort(),
    );
    expect(await schemasOn('b')).toEqual([warehouseSchemaFor(accounts.b)]);
    expect(await schemasOn('c')).toEqual([warehouseSchemaFor(accounts.c)]);
  }, 60_000);

  it('one server down: the others keep loading within seconds; its records land once after the restart', async () => {
    let loading = true;
    const load = (async () => {
      while (loading) {
        await Promise.all([send(accounts.a), send(accounts.b), send(accounts.c)]);
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await servers.b.stop();
    const lags: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      const sentAt = Date.now();
      const [markerA] = await send(accounts.a);
      const [markerC] = await send(accounts.c);
      await waitFor(
        async () =>
          (await storedIds(servers.a, accounts.a)).includes(markerA ?? '') &&
          (await storedIds(servers.c, accounts.c)).includes(markerC ?? ''),
        20_000,
        'a marker of a and c while b is down',
      );
      lags.push(Date.now() - sentAt);
      // b stays down for five seconds at least: longer than its breaker's longest cooldown.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, sentAt + 1000 - Date.now())));
    }
    const samples = await gauges();
    expect(sampleSum(samples, 'pipeline_delivery_warehouse_breaker_open', { warehouse: 'wh-b' })).toBe(1);
    expect(
      sampleSum(samples, 'pipeline_delivery_warehouse_status', { warehouse: 'wh-b', status: 'unavailable' }),
    ).toBe(1);
    expect(sampleSum(samples, 'pipeline_delivery_warehouse_breaker_open', { warehouse: 'wh-a' })).toBe(0);
    await servers.b.start();
    loading = false;
    await load;
    for (const accountId of Object.values(accounts))
      await waitFor(() => allStored(accountId), 60_000, `every row of ${accountId} after the restart`);

    // Exactly once: every message id of b stored, none twice (the table would refuse it anyway).
    const [counts] = await superuserQuery<{ rows: number; ids: number }>(
      servers.b,
      `SELECT count(*)::int AS rows, count(DISTINCT message_id)::int AS ids FROM ${warehouseSchemaFor(accounts.b)}.events`,
    );
    expect(counts).toEqual({ rows: sent.get(accounts.b)?.size, ids: sent.get(accounts.b)?.size });
    expect(await storedIds(servers.b, accounts.b)).toEqual([...(sent.get(accounts.b) ?? [])].sort());
    expect(await topicRecords(kafka, topics.deadLetter)).toEqual([]);
    const held = await topicRecords(kafka, topics.retry);
    expect(held.length).toBeGreaterThan(0);
    for (const record of held)
      expect(record.headers).toMatchObject({
        'x-delivery-target': 'warehouse:wh-b',
        'x-delivery-held': 'true',
        // A hold is not an attempt of the record.
        'x-delivery-attempt': '0',
        'x-delivery-reason': expect.stringMatching(/^warehouse_unavailable: /),
      });
    // Held again and again (more often than maxAttempts allows a failure), never dead-lettered.
    const origins = new Set(held.map((r) => r.headers['x-delivery-origin']));
    expect(held.length).toBeGreaterThan(origins.size);
    expect(Math.max(...lags)).toBeLessThan(10_000);
    process.stderr.write(
      `lag of a and c while b was down (ms): ${lags.join(', ')}; b records held ${held.length} times for ${origins.size} records\n`,
    );
    expect(running.running()).toBe(true);
    expect(fatal).toBeUndefined();
    const after = await gauges();
    expect(sampleSum(after, 'pipeline_delivery_warehouse_breaker_open', { warehouse: 'wh-b' })).toBe(0);
    // Reported on each change only, however many probes failed in between.
    expect(statuses.filter((s) => s.warehouseId === 'wh-b').map((s) => s.status)).toEqual([
      'unavailable',
      'active',
    ]);
  }, 180_000);

  it('a login refused: the process stays up, the status says misconfigured, every row arrives once it is allowed again', async () => {
    await superuserQuery(servers.c, 'ALTER ROLE loader NOLOGIN', 'postgres');
    // The pool's open sessions would go on working: end them, as a revoked role's would be.
    await superuserQuery(
      servers.c,
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'loader'",
      'postgres',
    );
    const refused = await send(accounts.c, 4);
    const meanwhile = await send(accounts.a2, 2);
    await waitFor(
      () => statuses.some((s) => s.warehouseId === 'wh-c' && s.status === 'misconfigured'),
      30_000,
      'wh-c reported misconfigured',
    );
    // Its sessions ended first (57P01: unavailable) or a new one was refused at once: either
    // way the refused login is reported as misconfigured.
    expect(statuses.find((s) => s.warehouseId === 'wh-c' && s.status === 'misconfigured')).toEqual({
      warehouseId: 'wh-c',
      status: 'misconfigured',
      detail: expect.stringMatching(/^28000 role "loader" is not permitted to log in/),
    });
    await waitFor(
      async () => meanwhile.every((id) => id) && (await allStored(accounts.a2)),
      20_000,
      'the rows of an account on another server',
    );
    const samples = await gauges();
    expect(
      sampleSum(samples, 'pipeline_delivery_warehouse_status', {
        warehouse: 'wh-c',
        status: 'misconfigured',
      }),
    ).toBe(1);
    expect(sampleSum(samples, 'pipeline_delivery_warehouse_breaker_open', { warehouse: 'wh-c' })).toBe(1);
    expect(running.running()).toBe(true);
    expect(fatal).toBeUndefined();
    expect(await storedIds(servers.c, accounts.c)).not.toEqual(expect.arrayContaining(refused));

    await superuserQuery(servers.c, 'ALTER ROLE loader LOGIN', 'postgres');
    await waitFor(() => allStored(accounts.c), 30_000, 'the rows of c once it lets the consumer in');
    expect(await storedIds(servers.c, accounts.c)).toEqual([...(sent.get(accounts.c) ?? [])].sort());
    await waitFor(() => statuses.at(-1)?.status === 'active', 10_000, 'wh-c reported active again');
    expect(statuses.filter((s) => s.warehouseId === 'wh-c').slice(-2)).toEqual([
      expect.objectContaining({ status: 'misconfigured' }),
      { warehouseId: 'wh-c', status: 'active', detail: null },
    ]);
    const after = await gauges();
    expect(
      sampleSum(after, 'pipeline_delivery_warehouse_status', { warehouse: 'wh-c', status: 'active' }),
    ).toBe(1);
    expect(await topicRecords(kafka, topics.deadLetter)).toEqual([]);
  }, 120_000);

  it('a grant revoked: permission denied is misconfigured, the process stays up, every row arrives once it is granted again', async () => {
    const events = `"${warehouseSchemaFor(accounts.c)}".events`;
    // The consumer's role loses its table: owned by another role now, without a grant to it.
    await superuserQuery(servers.c, `ALTER TABLE ${events} OWNER TO postgres`);
    const refused = await send(accounts.c, 3);
    const meanwhile = await send(accounts.a2, 2);
    await waitFor(
      () =>
        statuses.at(-1)?.warehouseId === 'wh-c' &&
        statuses.at(-1)?.status === 'misconfigured' &&
        /^42501 /.test(statuses.at(-1)?.detail ?? ''),
      30_000,
      'wh-c reported misconfigured for the revoked grant',
    );
    expect(statuses.at(-1)).toEqual({
      warehouseId: 'wh-c',
      status: 'misconfigured',
      detail: expect.stringMatching(/^42501 permission denied for table events/),
    });
    await waitFor(
      async () => meanwhile.every((id) => id) && (await allStored(accounts.a2)),
      20_000,
      'the rows of an account on another server',
    );
    expect(running.running()).toBe(true);
    expect(fatal).toBeUndefined();
    expect(await storedIds(servers.c, accounts.c)).not.toEqual(expect.arrayContaining(refused));

    await superuserQuery(servers.c, `GRANT SELECT, INSERT, UPDATE ON ${events} TO loader`);
    await waitFor(() => allStored(accounts.c), 30_000, 'the rows of c once the grant is back');
    expect(await storedIds(servers.c, accounts.c)).toEqual([...(sent.get(accounts.c) ?? [])].sort());
    await waitFor(() => statuses.at(-1)?.status === 'active', 10_000, 'wh-c reported active again');
    expect(statuses.at(-1)).toEqual({ warehouseId: 'wh-c', status: 'active', detail: null });
    expect(await topicRecords(kafka, topics.deadLetter)).toEqual([]);
  }, 120_000);

  it('never shows a warehouse password: not in the log, the retry topic or the dead letters', async () => {
    const log = logLines.join('');
    // The log was captured: it tells of both outages, by warehouse.
    expect(log).toContain('warehouse breaker opened');
    expect(log).toContain('"warehouseId":"wh-b"');
    expect(log).toContain('"kind":"misconfigured"');
    const parked = [
      ...(await topicRecords(kafka, topics.retry)),
      ...(await topicRecords(kafka, topics.deadLetter)),
    ];
    const texts = [log, ...parked.map((r) => JSON.stringify(r))];
    for (const form of [password, encodeURIComponent(password), password.slice(5, 41)])
      expect(texts.filter((text) => text.includes(form))).toEqual([]);
  });
});
