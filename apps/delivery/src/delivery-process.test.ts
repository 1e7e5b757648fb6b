import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { loadConfig } from '@pipeline/config';
import { outboxKey, toOutboxEnvelopes, type TrackingEvent } from '@pipeline/events';
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

// The built consumer process, as operators run it: killed with SIGKILL mid-load and restarted,
// it leaves the warehouse holding every acknowledged event exactly once. Its dead letters are
// listed and replayed with the documented CLI.
const dist = path.join(__dirname, '../dist');
const logger = createLogger({ service: 'delivery-process-test', stream: new PassThrough() });
const kafkaConfig = loadConfig(kafkaConfigSchema, process.env);
const kafka = createKafka(kafkaConfig, { clientId: 'delivery-process-test', logger });
const run = promisify(execFile);

describe('delivery --destination warehouse (the process, real Kafka and PostgreSQL)', () => {
  const prefix = `test-${randomUUID().slice(0, 8)}.`;
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix).topic;
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  // Below Linux's ephemeral range (32768+), so no outgoing connection holds it.
  const httpPort = 20000 + Math.floor(Math.random() * 10000);
  let db: ScratchDatabase;
  let client: Client;
  let consumer: ChildProcess | undefined;
  const env = () => ({
    ...process.env,
    KAFKA_TOPIC_PREFIX: prefix,
    WAREHOUSE_URL: db.url,
    DELIVERY_HTTP_PORT: String(httpPort),
    DELIVERY_HTTP_HOST: '127.0.0.1',
    // The killed consumer's partitions go to the restarted one after this long.
    DELIVERY_SESSION_TIMEOUT_MS: '6000',
    LOG_LEVEL: 'warn',
    LOG_FORMAT: 'json',
  });
  const startConsumer = () => {
    consumer = spawn(process.execPath, [path.join(dist, 'main.js'), '--destination', 'warehouse'], {
      env: env(),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    return consumer;
  };
  const rows = async (): Promise<{ total: number; distinct: number }> => {
    try {
      const result = await client.query(
        `SELECT count(*)::int AS total, count(DISTINCT message_id)::int AS distinct FROM ${schema}.events`,
      );
      return result.rows[0];
    } catch (error) {
      // Only "no such schema/table" means zero rows: the first load creates them. Anything else
      // is a failure of the test, not an empty warehouse.
      const code = (error as { code?: string }).code;
      if (code === '42P01' || code === '3F000') return { total: 0, distinct: 0 };
      throw error;
    }
  };
  const until = async (predicate: () => Promise<boolean>, timeoutMs: number, what: string) => {
    const started = Date.now();
    while (!(await predicate())) {
      if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  beforeAll(async () => {
    if (!existsSync(path.join(dist, 'main.js')))
      throw new Error('build apps/delivery first: pnpm exec nx build delivery');
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'delivery process');
    client = new Client({ connectionString: db.url });
    await client.connect();
    await ensureTopics(kafka, [prefixedTopic(pipelineTopics.trackingEvents, prefix)], {
      replicationFactor: 1,
      logger,
    });
  });
  afterAll(async () => {
    consumer?.kill('SIGKILL');
    await client.end();
    await db.drop();
  });

  it('survives SIGKILL mid-load: after a restart the warehouse holds every acknowledged messageId exactly once', async () => {
    const producer = createProducer(kafka);
    await producer.connect();
    const acknowledged: string[] = [];
    const publish = async (records: number, eventName = 'Crash Test', partition?: number) => {
      for (let r = 0; r < records; r += 1) {
        const events: TrackingEvent[] = Array.from({ length: 20 }, (_, i) => ({
          type: 'track',
          event: eventName,
          messageId: randomUUID(),
          anonymousId: `anon-${i}`,
          timestamp: new Date().toISOString(),
          properties: { i },
        }));
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
          events,
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
        acknowledged.push(...events.map((e) => e.messageId));
      }
    };

    await publish(100);
    const first = startConsumer();
    const loading = publish(100);
    // Killed while it is loading (the topic is still being written): some rows are in.
    await until(async () => (await rows()).total >= 200, 120_000, 'the first rows');
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    await loading;
    // Published after the kill, so the dead consumer cannot have loaded everything.
    await publish(200);
    expect((await rows()).total).toBeLessThan(acknowledged.length);

    startConsumer();
    await until(async () => (await rows()).total >= acknowledged.length, 150_000, 'every acknowledged event');
    // "Nothing more arrives later", proven by a marker record at the end of every partition: a
    // partition is loaded in order, so once its marker is in, nothing before it is still coming.
    const admin = kafka.admin();
    await admin.connect();
    const [metadata] = (await admin.fetchTopicMetadata({ topics: [outbox] })).topics;
    await admin.disconnect();
    const partitions = (metadata?.partitions ?? []).map((p) => p.partitionId);
    expect(partitions.length).toBeGreaterThan(0);
    for (const partition of partitions) await publish(1, 'Marker', partition);
    await producer.disconnect();
    const markers = async () =>
      (
        await client.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${schema}.events WHERE event = 'Marker'`,
        )
      ).rows[0]?.n;
    await until(async () => (await markers()) === partitions.length * 20, 150_000, 'the markers');
    const loaded = await client.query<{ message_id: string }>(`SELECT message_id FROM ${schema}.events`);
    expect(loaded.rows.length).toBe(acknowledged.length);
    expect(new Set(loaded.rows.map((r) => r.message_id))).toEqual(new Set(acknowledged));
  }, 300_000);

  it('serves /health and Prometheus /metrics with delivered counts and lag per group', async () => {
    const health = await fetch(`http://127.0.0.1:${httpPort}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true, destination: 'warehouse' });
    const ready = await fetch(`http://127.0.0.1:${httpPort}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ ok: true, checks: { consumer: 'up' } });
    expect((await fetch(`http://127.0.0.1:${httpPort}/livez`)).status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${httpPort}/metrics`)).text();
    expect(metrics).toMatch(/pipeline_delivery_events_delivered_total\{destination="warehouse"\} \d+/);
    expect(metrics).toMatch(
      new RegExp(
        `pipeline_delivery_consumer_lag\\{group="${prefix.replace('.', '\\.')}delivery\\.warehouse",topic="[^"]+",partition="0"\\} \\d+`,
      ),
    );
  });

  it('lists a dead letter with its reason and replays it through the retry topic (dead-letters CLI)', async () => {
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({ topic: outbox, acks: -1, messages: [{ key: 'poison', value: 'not json at all' }] });
    await producer.disconnect();
    const cli = (...args: string[]) =>
      run(process.execPath, [path.join(dist, 'dead-letters/main.js'), ...args], { env: env() });
    const list = async () =>
      (await cli('list', '--destination', 'warehouse')).stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line));
    await until(async () => (await list()).length === 1, 60_000, 'the dead letter');
    const [letter] = await list();
    expect(letter).toMatchObject({
      offset: '0/0',
      target: 'warehouse',
      attempts: 1,
      permanent: true,
      reason: expect.stringMatching(/^not_an_outbox_envelope/),
      events: 0,
      origin: expect.stringMatching(new RegExp(`^${outbox.replace(/\./g, '\\.')}/\\d+/\\d+$`)),
    });

    const replay = JSON.parse((await cli('replay', '--destination', 'warehouse', '--from', '0')).stdout);
    expect(replay).toEqual({ replayed: 1, offsets: ['0/0'] });
    // Still not an envelope: the consumer takes it from the retry topic and dead-letters it again,
    // keeping where it first came from.
    await until(async () => (await list()).length === 2, 60_000, 'the replayed letter back');
    const second = (await list())[1];
    expect(second.origin).toBe(letter.origin);
    expect(
      (await cli('list', '--destination', 'warehouse', '--from', '1')).stdout.trim().split('\n'),
    ).toHaveLength(1);
    const usage = await cli('list', '--destination', 'nowhere').catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(usage).toMatchObject({ code: 1, stderr: expect.stringMatching(/expected one of log, warehouse/) });
  }, 180_000);

  it('exits non-zero when it can no longer deliver (the warehouse table is gone), instead of idling', async () => {
    const running = consumer;
    if (!running || running.exitCode !== null)
      throw new Error('the consumer of the earlier tests is not running');
    const exited = new Promise<number | null>((resolve) => running.once('exit', (code) => resolve(code)));
    // An operator's mistake no retry can fix: the next record meets a missing table (42P01).
    await client.query(`ALTER TABLE ${schema}.events RENAME TO events_moved`);
    const producer = createProducer(kafka);
    await producer.connect();
    const [record] = toOutboxEnvelopes(
      {
        v: 2,
        accountId,
        writeKeyId: randomUUID(),
        batchId: randomUUID(),
        receivedAt: new Date().toISOString(),
        ip: null,
        userAgent: null,
      },
      [
        {
          type: 'track',
          event: 'After the move',
          messageId: randomUUID(),
          anonymousId: 'a',
          timestamp: new Date().toISOString(),
        },
      ],
    );
    await producer.send({
      topic: outbox,
      acks: -1,
      messages: [{ key: outboxKey(record!.envelope), value: record!.json }],
    });
    await producer.disconnect();
    expect(await exited).toBe(1);
    // Nothing was committed past the record: a restarted consumer would meet it again.
    await client.query(`ALTER TABLE ${schema}.events_moved RENAME TO events`);
  }, 120_000);
});
