// Placement benchmark: one `delivery --destination warehouse` process loading accounts placed on
// several PostgreSQL servers. Starts the servers (initdb + pg_ctl, @pipeline/postgres/testing),
// a control plane in this process (its warehouses, placements and the internal endpoint the
// consumer resolves accounts through), places the accounts round robin, fills a fresh outbox
// topic and times the built consumer from its start until its group has committed every record.
// Prints events/s, the peak connections the consumer held on each server (pg_stat_activity,
// sampled every 50 ms) against its per-process budget, and checks every row landed on its
// account's own server.
//   node tools/bench/warehouse-placement.js [warehouses=3] [accounts=1000] [eventsPerAccount=100]
const http = require('node:http');
const { spawn } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const path = require('node:path');
const { PassThrough } = require('node:stream');

const root = path.join(__dirname, '../..');
const cpDist = (name) => path.join(root, 'apps/control-plane/dist', name);
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/delivery/dist')] }));
const fromControlPlane = (name) => require(require.resolve(name, { paths: [cpDist('.')] }));
const { composeControlPlane } = require(cpDist('composition'));
const { controlPlaneConfigSchema } = require(cpDist('config'));
const { migrate } = require(cpDist('database/data-source'));
const { createDataSource } = require(cpDist('data-model'));
const { AccountService } = require(cpDist('accounts/account.service'));
const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
const { testClusters } = fromControlPlane('@pipeline/postgres/testing');
const { createKafka, createProducer, ensureTopics, kafkaConfigSchema, pipelineTopics, prefixedTopic } =
  lib('@pipeline/kafka');
const { loadConfig } = lib('@pipeline/config');
const { createLogger } = lib('@pipeline/logger');
const { outboxKey, toOutboxEnvelopes } = lib('@pipeline/events');
const { warehouseSchemaFor } = lib('@pipeline/tenancy');
const { consumerGroupFor } = lib('@pipeline/destinations');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const warehouseCount = Number(args[0] ?? 3);
const accountCount = Number(args[1] ?? 1000);
const eventsPerAccount = Number(args[2] ?? 100);
const PER_RECORD = 20;
const BUDGET = 20; // WAREHOUSE_PROCESS_MAX_CONNECTIONS's default, set explicitly below
const logger = createLogger({ service: 'bench', stream: new PassThrough(), level: 'error' });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'bench', logger });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const token = () => randomBytes(32).toString('hex');

async function main() {
  const clusters = testClusters();
  const prefix = `bench-${randomUUID().slice(0, 8)}.`;
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix);
  const scratch = await createScratchDatabase(
    process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    'bench placement',
  );
  let server;
  let delivery;
  let controlPlane;
  let accountsSource;
  try {
    const servers = [];
    for (let i = 0; i < warehouseCount; i += 1) {
      const cluster = await clusters.start(`bench-wh-${i + 1}`, { maxConnections: 60 });
      await cluster.createDatabase('warehouse');
      servers.push(cluster);
    }
    accountsSource = createDataSource({ url: scratch.url, poolMax: 2 });
    await accountsSource.initialize();
    await migrate(accountsSource);

    const tokens = { warehouse: token(), ingestion: token() };
    const config = loadConfig(controlPlaneConfigSchema, {
      ...process.env,
      DATABASE_URL: scratch.url,
      WAREHOUSE_URL: servers[0].urlFor('warehouse'),
      CREDENTIALS_ENCRYPTION_KEYS: `b1:${randomBytes(32).toString('base64')}`,
      INTERNAL_TOKEN_INGESTION: tokens.ingestion,
      INTERNAL_TOKEN_DELIVERY_WAREHOUSE: tokens.warehouse,
      TASK_WORKER_ENABLED: 'false',
      JOB_WORKER_ENABLED: 'false',
      LOG_LEVEL: 'error',
    });
    controlPlane = await composeControlPlane(config, logger);
    server = http.createServer(controlPlane.app);
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address();
    const { warehouses, placements } = controlPlane.services;
    const ids = [(await warehouses.get('default')).id];
    for (let i = 1; i < warehouseCount; i += 1) {
      const added = await warehouses.add({
        name: `bench-${i + 1}`,
        host: servers[i].host,
        port: servers[i].port,
        database: 'warehouse',
        user: servers[i].user,
        password: 'unused-trust-auth',
        tlsMode: 'disable',
      });
      ids.push(added.id);
    }

    // Accounts in turn on each warehouse: the default decides where a new account goes.
    const accountsService = new AccountService(accountsSource);
    const accounts = [];
    for (let w = 0; w < warehouseCount; w += 1) {
      await warehouses.setDefault(ids[w]);
      const share = Math.floor(accountCount / warehouseCount) + (w < accountCount % warehouseCount ? 1 : 0);
      for (let a = 0; a < share; a += 1) {
        const account = await accountsService.create(`bench ${w}-${a}`, []);
        accounts.push({ id: account.id, server: w });
      }
    }
    for (const account of accounts.slice(0, 5)) {
      const placed = await placements.resolve(account.id);
      if (placed.placement.warehouseId !== ids[account.server])
        throw new Error('an account is not on the warehouse it was created on');
    }

    await ensureTopics(kafka, [outbox], { replicationFactor: 1, logger });
    const producer = createProducer(kafka);
    await producer.connect();
    const total = accounts.length * eventsPerAccount;
    const messages = [];
    for (const account of accounts) {
      const events = Array.from({ length: eventsPerAccount }, (_, i) => ({
        type: 'track',
        event: 'Product Viewed',
        messageId: randomUUID(),
        anonymousId: `anon-${i % 50}`,
        timestamp: new Date().toISOString(),
        properties: { sku: `SKU-${i % 100}`, price: 12.5 },
      }));
      for (let i = 0; i < events.length; i += PER_RECORD) {
        for (const { envelope, json } of toOutboxEnvelopes(
          {
            v: 2,
            accountId: account.id,
            writeKeyId: randomUUID(),
            batchId: randomUUID(),
            receivedAt: new Date().toISOString(),
            ip: '203.0.113.9',
            userAgent: 'bench',
          },
          events.slice(i, i + PER_RECORD),
        ))
          messages.push({ key: outboxKey(envelope), value: json });
      }
    }
    for (let i = 0; i < messages.length; i += 500)
      await producer.send({ topic: outbox.topic, acks: -1, messages: messages.slice(i, i + 500) });
    await producer.disconnect();

    const admin = kafka.admin();
    await admin.connect();
    const ends = await admin.fetchTopicOffsets(outbox.topic);
    const group = consumerGroupFor('warehouse', prefix);
    const caughtUp = async () => {
      const [committed] = await admin.fetchOffsets({ groupId: group, topics: [outbox.topic] });
      return ends.every((end) => {
        const c = committed.partitions.find((p) => p.partition === end.partition);
        return c && Number(c.offset) >= Number(end.offset);
      });
    };

    const peak = servers.map(() => 0);
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await Promise.all(
          servers.map(async (cluster, i) => {
            const [row] = await cluster.query(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = 'warehouse' AND backend_type = 'client backend'",
            );
            peak[i] = Math.max(peak[i], row.n);
          }),
        );
        await sleep(50);
      }
    })();

    const started = process.hrtime.bigint();
    delivery = spawn(
      process.execPath,
      [path.join(root, 'apps/delivery/dist/main.js'), '--destination', 'warehouse'],
      {
        env: {
          ...process.env,
          KAFKA_TOPIC_PREFIX: prefix,
          CONTROL_PLANE_URL: `http://127.0.0.1:${port}`,
          INTERNAL_SERVICE_TOKEN: tokens.warehouse,
          WAREHOUSE_PROCESS_MAX_CONNECTIONS: String(BUDGET),
          DELIVERY_HTTP_PORT: '0',
          LOG_LEVEL: 'error',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    while (!(await caughtUp())) {
      if (delivery.exitCode !== null) throw new Error(`the consumer exited with ${delivery.exitCode}`);
      await sleep(100);
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    sampling = false;
    await sampler;
    await admin.disconnect();

    // Every account's rows on its own server, and on no other.
    const rowsOn = servers.map(() => 0);
    for (const [i, cluster] of servers.entries()) {
      const schemas = await cluster.query(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'account\\_%'",
        [],
        'warehouse',
      );
      const expected = new Set(accounts.filter((a) => a.server === i).map((a) => warehouseSchemaFor(a.id)));
      const stray = schemas.filter((s) => !expected.has(s.nspname));
      if (stray.length > 0 || schemas.length !== expected.size)
        throw new Error(`server ${i + 1} holds ${schemas.length} schemas, ${stray.length} of other accounts`);
      const counts = [...expected].map((schema) => `SELECT count(*) AS n FROM "${schema}".events`);
      const [row] = await cluster.query(
        `SELECT sum(n)::bigint AS n FROM (${counts.join(' UNION ALL ')}) c`,
        [],
        'warehouse',
      );
      rowsOn[i] = Number(row.n);
      if (rowsOn[i] !== expected.size * eventsPerAccount)
        throw new Error(`server ${i + 1} holds ${rowsOn[i]} rows, not ${expected.size * eventsPerAccount}`);
    }

    console.log(
      `warehouse placement benchmark: ${warehouseCount} PostgreSQL servers, ${accounts.length} accounts, ${total} events in records of ${PER_RECORD}, node ${process.version}`,
    );
    console.log(
      `delivery: ${(total / seconds).toFixed(0)} events/s (${seconds.toFixed(1)} s from the process start until every record was committed)`,
    );
    for (const [i] of servers.entries())
      console.log(
        `server ${i + 1}: ${accounts.filter((a) => a.server === i).length} accounts, ${rowsOn[i]} rows, peak ${peak[i]} connections of the consumer (process budget ${BUDGET})`,
      );
    console.log(
      `connections at once, all servers: peak sum ${peak.reduce((a, b) => a + b, 0)} (each sampled separately)`,
    );
  } finally {
    if (delivery && delivery.exitCode === null) {
      delivery.kill('SIGTERM');
      await new Promise((resolve) => delivery.once('exit', resolve));
    }
    if (server) await new Promise((resolve) => server.close(resolve));
    if (controlPlane)
      for (const step of [...controlPlane.shutdownSteps].reverse()) await step.run().catch(() => undefined);
    if (accountsSource) await accountsSource.destroy();
    await clusters.destroyAll();
    await scratch.drop().catch(() => undefined);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
