// Delivery benchmark: events/s from the Kafka outbox into the warehouse tables
// by the built `delivery --destination warehouse` process, against a raw COPY of the same rows
// into PostgreSQL in the same run, with the delivery process's peak RSS; then the latency from
// ingestion's 202 to the row being visible (skipped when latencySeconds is 0).
//   node tools/bench/warehouse-load.js [events=100000] [latencySeconds=10] [requestsPerSecond=100] [--rows-per-copy=100,500,1000,5000]
// --rows-per-copy measures each size in turn (WAREHOUSE_ROWS_PER_COPY), each against its own COPY;
// without it, the writer's default is measured. --cpu-prof=DIR profiles the delivery process.
// --engine=clickhouse loads into ClickHouse instead (a chdb test server the bench starts; needs
// the built libs), against a raw `INSERT ... FORMAT JSONEachRow` of the same rows, converted as
// the engine converts them, into the same server; the latency phase is PostgreSQL's only.
// --runs=N repeats the measurement N times (each with its own outbox and account).
const { spawnSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const path = require('node:path');
const { PassThrough } = require('node:stream');

const root = path.join(__dirname, '../..');
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/delivery/dist')] }));
const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
const { createKafka, ensureTopics, kafkaConfigSchema, pipelineTopics, prefixedTopic } =
  lib('@pipeline/kafka');
const { loadConfig } = lib('@pipeline/config');
const { createLogger } = lib('@pipeline/logger');
const { normalizeEvent, receiptContextOf, warehouseTables } = lib('@pipeline/events');
const { warehouseSchemaFor } = lib('@pipeline/tenancy');
const { WarehouseWriter } = lib('@pipeline/destinations');
const {
  startCollectServer,
  startDelivery: startProcess,
  stopProcess: stop,
  peakRssKb,
  cpuSeconds,
} = require('./bench-processes');
const {
  PER_RECORD,
  makeEvents,
  receiptFor,
  fillOutbox,
  countEvents: count,
  deleteDeliveryTopics,
} = require('./bench-outbox');
const { Client } = require(require.resolve('pg', { paths: [path.join(root, 'libs/destinations')] }));
const destinationsTesting = () => require(path.join(root, 'libs/destinations/dist/testing'));

const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const total = Number(args[0] ?? 100_000);
const latencySeconds = Number(args[1] ?? 10);
const requestsPerSecond = Number(args[2] ?? 100);
const sizesFlag = flags.find((f) => f.startsWith('--rows-per-copy='));
// --cpu-prof=DIR: the delivery process writes a CPU profile there when it stops.
const profileFlag = flags.find((f) => f.startsWith('--cpu-prof='));
// The delivery process starts with the Node flags of its image (tools/deploy/node-flags.mjs), or
// BENCH_NODE_FLAGS ('' for none) to compare a heap setting (bench-processes.js).
const nodeArgs = profileFlag ? ['--cpu-prof', `--cpu-prof-dir=${profileFlag.split('=')[1]}`] : [];
const rowsPerCopySizes = sizesFlag ? sizesFlag.split('=')[1].split(',').map(Number) : [undefined];
const engine = (flags.find((f) => f.startsWith('--engine=')) ?? '--engine=postgres').split('=')[1];
if (!['postgres', 'clickhouse'].includes(engine))
  throw new Error(`--engine is postgres or clickhouse, not ${engine}`);
const runs = Number((flags.find((f) => f.startsWith('--runs=')) ?? '--runs=1').split('=')[1]);
const logger = createLogger({ service: 'bench', stream: new PassThrough(), level: 'error' });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'bench', logger });
const prefixes = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

function startDelivery(warehouseUrl, prefix, rowsPerCopy) {
  return startProcess(
    'warehouse',
    {
      KAFKA_TOPIC_PREFIX: prefix,
      WAREHOUSE_URL: warehouseUrl,
      DELIVERY_SESSION_TIMEOUT_MS: '6000',
      ...(rowsPerCopy ? { WAREHOUSE_ROWS_PER_COPY: String(rowsPerCopy) } : {}),
    },
    nodeArgs,
  );
}

/** PostgreSQL: a scratch database; the baseline is psql's \copy of the rows as CSV. */
async function postgresTarget() {
  const db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'bench warehouse');
  const client = new Client({ connectionString: db.url });
  await client.connect();
  return {
    db,
    client,
    url: db.url,
    baselineName: 'COPY',
    count: (schema) => count(client, schema),
    /** COPY of the same rows (normalized beforehand, untimed) into the same table shape. */
    baseline: async (rows) => {
      const baselineSchema = `bench_copy_baseline_${prefixes.length}`;
      const writer = new WarehouseWriter(db.url);
      await writer.write(baselineSchema, rows.slice(0, 1));
      await writer.close();
      await client.query(`TRUNCATE ${baselineSchema}.events`);
      const columns = Object.keys(warehouseTables.events);
      const csvValue = (value) => {
        if (value === null || value === undefined) return '';
        const text =
          typeof value === 'object' && !(value instanceof Date)
            ? JSON.stringify(value)
            : value instanceof Date
              ? value.toISOString()
              : String(value);
        return `"${text.replace(/"/g, '""')}"`;
      };
      const csv = rows.map(({ row }) => columns.map((c) => csvValue(row[c])).join(',')).join('\n');
      const copyStarted = Date.now();
      const copy = spawnSync(
        'psql',
        [
          db.url,
          '-v',
          'ON_ERROR_STOP=1',
          '-qc',
          `\\copy ${baselineSchema}.events (${columns.join(',')}) FROM STDIN WITH (FORMAT csv)`,
        ],
        { input: csv, maxBuffer: 1 << 30 },
      );
      const seconds = (Date.now() - copyStarted) / 1000;
      if (copy.status !== 0) throw new Error(`COPY failed: ${copy.stderr}`);
      return { stored: await count(client, baselineSchema), seconds };
    },
    close: async () => {
      await client.end();
      await db.drop();
    },
  };
}

/** ClickHouse: a chdb test server; the baseline is one raw INSERT ... FORMAT JSONEachRow. */
async function clickhouseTarget() {
  const { startClickHouseWarehouse, clickhouseRowValues } = destinationsTesting();
  const warehouse = await startClickHouseWarehouse();
  return {
    url: warehouse.url,
    baselineName: 'INSERT',
    count: (schema) => warehouse.count(schema, 'events', true),
    baseline: async (rows) => {
      const database = `bench_insert_baseline_${prefixes.length}`;
      await warehouse.engine.ensureAccount({ accountId: 'baseline', schema: database });
      // Converted as the engine converts them, beforehand and untimed.
      const values = rows.map(({ row }) => clickhouseRowValues('events', row));
      const started = Date.now();
      await warehouse.client.insert({
        table: `${database}.events`,
        values,
        format: 'JSONEachRow',
        clickhouse_settings: { async_insert: 0 },
      });
      const seconds = (Date.now() - started) / 1000;
      return { stored: await warehouse.count(database, 'events', true), seconds };
    },
    close: () => warehouse.destroy(),
  };
}

/** Fills an outbox, delivers it with a fresh process, then loads the same rows raw: one same-run ratio. */
async function measure(target, rowsPerCopy, run) {
  const prefix = `bench-${Date.now()}-${rowsPerCopy ?? 'default'}.`;
  prefixes.push(prefix);
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix);
  await ensureTopics(kafka, [outbox], { replicationFactor: 1, logger });

  // 1. Kafka -> warehouse: the outbox filled first, then the consumer started; timed from its first row to its last.
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  const events = makeEvents(total);
  const receipt = receiptFor(accountId);
  await fillOutbox(kafka, outbox.topic, receipt, events);
  const delivery = startDelivery(target.url, prefix, rowsPerCopy);
  while ((await target.count(schema)) === 0) await sleep(20);
  const firstRow = Date.now();
  const cpuAtFirstRow = cpuSeconds(delivery.pid);
  for (;;) {
    const n = await target.count(schema);
    if (n >= total) break;
    await sleep(50);
  }
  const e2eSeconds = (Date.now() - firstRow) / 1000;
  const e2eRate = total / e2eSeconds;
  const rssMb = peakRssKb(delivery.pid) / 1024;
  const cpuUsed = cpuSeconds(delivery.pid) - cpuAtFirstRow;
  const cpuPerThousand = (cpuUsed / total) * 1000;
  await stop(delivery);

  // 2. Baseline: the same rows (normalized beforehand, untimed), loaded raw into the same table shape.
  const rows = events.map((event) => normalizeEvent(event, receiptContextOf(receipt)));
  const { stored, seconds } = await target.baseline(rows);
  if (stored !== total) throw new Error(`the baseline stored ${stored} of ${total} rows`);
  const rawRate = stored / seconds;

  const size = rowsPerCopy ? `${rowsPerCopy} rows per COPY` : 'default rows per COPY';
  const label = `${engine}, ${size}${runs > 1 ? `, run ${run}` : ''}`;
  console.log(
    `[${label}] kafka -> warehouse (delivery process)  ${Math.round(e2eRate)} events/s  (${total} in ${e2eSeconds.toFixed(2)} s), peak RSS ${rssMb.toFixed(0)} MB, CPU ${(cpuPerThousand * 1000).toFixed(0)} ms per 1000 events (${Math.round((100 * cpuUsed) / e2eSeconds)}% of a core)`,
  );
  console.log(
    `[${label}] baseline: ${target.baselineName} of the same rows         ${Math.round(rawRate)} events/s  (${stored} in ${seconds.toFixed(2)} s)`,
  );
  console.log(`[${label}] ratio delivery/${target.baselineName}: ${(e2eRate / rawRate).toFixed(2)}`);
  return { ratio: e2eRate / rawRate, rate: e2eRate };
}

async function main() {
  const target = engine === 'clickhouse' ? await clickhouseTarget() : await postgresTarget();
  console.log(
    `warehouse delivery (${engine}): ${total} track events in records of ${PER_RECORD}, node ${process.version}`,
  );
  const results = [];
  for (let run = 1; run <= runs; run += 1)
    for (const rowsPerCopy of rowsPerCopySizes) {
      const result = await measure(target, rowsPerCopy, run);
      results.push(result);
    }
  if (results.length > 1) {
    const median = (values) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
    console.log(
      `median of ${results.length}: ${Math.round(median(results.map((r) => r.rate)))} events/s, ratio ${median(results.map((r) => r.ratio)).toFixed(2)}`,
    );
  }
  if (latencySeconds > 0 && engine === 'postgres') await latency(target.db, target.client);
  else if (latencySeconds > 0) console.log('202 -> row visible: measured for PostgreSQL only');

  await deleteDeliveryTopics(kafka, 'warehouse', prefixes);
  await target.close();
}

/** Hosted /collect (202 after Kafka acks) -> row visible in the warehouse, at a steady rate. */
async function latency(db, client) {
  const prefix = prefixes[prefixes.length - 1];
  const delivery = startDelivery(db.url, prefix);
  // collect-server.js needs the built ingestion and control plane; without them it exits at once.
  const ready = await startCollectServer('hosted', { BENCH_TOPIC_PREFIX: prefix });
  const latencySchema = warehouseSchemaFor(ready.accountId);
  const acked = new Map();
  const latencies = [];
  let polling = true;
  const poller = (async () => {
    while (polling || acked.size > 0) {
      const pending = [...acked.keys()];
      if (pending.length > 0) {
        try {
          const { rows: seen } = await client.query(
            `SELECT message_id FROM ${latencySchema}.events WHERE message_id = ANY($1)`,
            [pending],
          );
          const now = Date.now();
          for (const { message_id: id } of seen) {
            latencies.push(now - acked.get(id));
            acked.delete(id);
          }
        } catch {
          // The schema appears with the first load.
        }
      }
      await sleep(5);
    }
  })();
  const requests = [];
  const started = Date.now();
  for (let i = 0; i < latencySeconds * requestsPerSecond; i += 1) {
    const due = started + (i * 1000) / requestsPerSecond;
    if (due > Date.now()) await sleep(due - Date.now());
    const batch = makeEvents(PER_RECORD);
    requests.push(
      fetch(`http://127.0.0.1:${ready.port}/collect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-write-key': ready.writeKey },
        body: JSON.stringify({ batch }),
      }).then((response) => {
        const at = Date.now();
        if (response.status === 202) for (const e of batch) acked.set(e.messageId, at);
      }),
    );
  }
  await Promise.all(requests);
  polling = false;
  const deadline = Date.now() + 30_000;
  while (acked.size > 0 && Date.now() < deadline) await sleep(50);
  polling = false;
  acked.clear();
  await poller;
  latencies.sort((a, b) => a - b);
  console.log(
    `202 -> row visible (${requestsPerSecond} req/s x ${PER_RECORD} events, ${latencySeconds} s): p50 ${percentile(latencies, 50)} ms  p99 ${percentile(latencies, 99)} ms  (${latencies.length} events)`,
  );

  await stop(ready.child);
  await stop(delivery);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
