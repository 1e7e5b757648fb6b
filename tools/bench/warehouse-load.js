// Delivery benchmark (issue 5): events/s from the Kafka outbox into the warehouse tables by the
// built `delivery --destination warehouse` process, against a raw COPY of the same rows into
// PostgreSQL in the same run; then the latency from ingestion's 202 to the row being visible.
//   node tools/bench/warehouse-load.js [events=100000] [latencySeconds=10] [requestsPerSecond=100]
const { spawn, spawnSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const path = require('node:path');
const readline = require('node:readline');
const { PassThrough } = require('node:stream');

const root = path.join(__dirname, '../..');
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/delivery/dist')] }));
const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
const { createKafka, createProducer, ensureTopics, kafkaConfigSchema, pipelineTopics, prefixedTopic } =
  lib('@pipeline/kafka');
const { loadConfig } = lib('@pipeline/config');
const { createLogger } = lib('@pipeline/logger');
const { normalizeEvent, outboxKey, receiptContextOf, toOutboxEnvelopes, warehouseTables } =
  lib('@pipeline/events');
const { warehouseSchemaFor } = lib('@pipeline/tenancy');
const { WarehouseWriter, consumerGroupFor, deliveryTopicsFor, retryGroupFor } = lib('@pipeline/destinations');
const { Client } = require(require.resolve('pg', { paths: [path.join(root, 'libs/destinations')] }));

const total = Number(process.argv[2] ?? 100_000);
const latencySeconds = Number(process.argv[3] ?? 10);
const requestsPerSecond = Number(process.argv[4] ?? 100);
const PER_RECORD = 20;
const logger = createLogger({ service: 'bench', stream: new PassThrough(), level: 'error' });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'bench', logger });
const prefix = `bench-${Date.now()}.`;
const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

const makeEvents = (n) =>
  Array.from({ length: n }, (_, i) => ({
    type: 'track',
    event: 'Product Viewed',
    messageId: randomUUID(),
    anonymousId: `anon-${i % 500}`,
    timestamp: new Date().toISOString(),
    properties: { sku: `SKU-${i % 100}`, price: 12.5, currency: 'EUR' },
    context: {
      library: { name: 'bench', version: '1' },
      page: { url: 'https://shop.example/p', path: '/p', title: 'Product' },
      campaign: { source: 'newsletter', medium: 'email' },
    },
  }));

function startDelivery(warehouseUrl) {
  const child = spawn(
    process.execPath,
    [path.join(root, 'apps/delivery/dist/main.js'), '--destination', 'warehouse'],
    {
      env: {
        ...process.env,
        KAFKA_TOPIC_PREFIX: prefix,
        WAREHOUSE_URL: warehouseUrl,
        DELIVERY_HTTP_PORT: '0',
        DELIVERY_SESSION_TIMEOUT_MS: '6000',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  return child;
}
const stop = (child) =>
  new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });

async function count(client, schema) {
  try {
    return (await client.query(`SELECT count(*)::int AS n FROM ${schema}.events`)).rows[0].n;
  } catch {
    return 0;
  }
}

async function main() {
  const db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'bench warehouse');
  const client = new Client({ connectionString: db.url });
  await client.connect();
  await ensureTopics(kafka, [outbox], { replicationFactor: 1, logger });
  console.log(
    `warehouse delivery: ${total} track events in records of ${PER_RECORD}, node ${process.version}`,
  );

  // 1. Kafka -> warehouse: the outbox filled first, then the consumer started; timed from its first row to its last.
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  const events = makeEvents(total);
  const receipt = {
    v: 2,
    accountId,
    writeKeyId: randomUUID(),
    batchId: 'bench',
    receivedAt: new Date().toISOString(),
    ip: '203.0.113.1',
    userAgent: 'bench',
  };
  const producer = createProducer(kafka);
  await producer.connect();
  for (let i = 0; i < events.length; i += 2000) {
    const messages = [];
    for (let j = i; j < Math.min(i + 2000, events.length); j += PER_RECORD) {
      for (const { envelope, json } of toOutboxEnvelopes(
        { ...receipt, batchId: `b${j}` },
        events.slice(j, j + PER_RECORD),
      ))
        messages.push({ key: outboxKey(envelope), value: json });
    }
    await producer.send({ topic: outbox.topic, acks: -1, messages });
  }
  await producer.disconnect();
  let delivery = startDelivery(db.url);
  while ((await count(client, schema)) === 0) await sleep(20);
  const firstRow = Date.now();
  for (;;) {
    const n = await count(client, schema);
    if (n >= total) break;
    await sleep(50);
  }
  const e2eSeconds = (Date.now() - firstRow) / 1000;
  const e2eRate = total / e2eSeconds;

  // 2. Baseline: COPY of the same rows (normalized beforehand, untimed) into the same table shape.
  const baselineSchema = 'bench_copy_baseline';
  const writer = new WarehouseWriter(db.url);
  const rows = events.map((event) => normalizeEvent(event, receiptContextOf(receipt)));
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
    {
      input: csv,
      maxBuffer: 1 << 30,
    },
  );
  const copySeconds = (Date.now() - copyStarted) / 1000;
  if (copy.status !== 0) throw new Error(`COPY failed: ${copy.stderr}`);
  const copied = await count(client, baselineSchema);
  const copyRate = copied / copySeconds;

  console.log(
    `kafka -> warehouse (delivery process)  ${Math.round(e2eRate)} events/s  (${total} in ${e2eSeconds.toFixed(2)} s)`,
  );
  console.log(
    `baseline: COPY of the same rows         ${Math.round(copyRate)} events/s  (${copied} in ${copySeconds.toFixed(2)} s)`,
  );
  console.log(`ratio delivery/COPY: ${(e2eRate / copyRate).toFixed(2)}`);

  // 3. Latency: hosted /collect (202 after Kafka acks) -> row visible in the warehouse, at a steady rate.
  const server = spawn(process.execPath, [path.join(__dirname, 'collect-server.js'), 'hosted'], {
    env: { ...process.env, BENCH_TOPIC: outbox.topic },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ready = await new Promise((resolve) =>
    readline.createInterface({ input: server.stdout }).once('line', (line) => resolve(JSON.parse(line))),
  );
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

  await new Promise((resolve) => {
    server.once('exit', resolve);
    server.kill('SIGTERM');
  });
  await stop(delivery);
  await client.end();
  const admin = kafka.admin();
  await admin.connect();
  await admin
    .deleteTopics({
      topics: [
        outbox.topic,
        deliveryTopicsFor('warehouse', prefix).retry.topic,
        deliveryTopicsFor('warehouse', prefix).deadLetter.topic,
      ],
    })
    .catch(() => undefined);
  await admin
    .deleteGroups([
      consumerGroupFor('warehouse', prefix),
      retryGroupFor(consumerGroupFor('warehouse', prefix)),
    ])
    .catch(() => undefined);
  await admin.disconnect();
  await db.drop();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
