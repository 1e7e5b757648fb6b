// Child process of collect-load.js. `hosted`: the built ingestion service in hosted mode
// (the built control plane in-process on a scratch database, real Kafka with acks=-1, Redis
// dedupe, limits set out of the way). `baseline`: a bare node:http server that reads the body,
// parses it as JSON and answers 202. Prints {"port", "writeKey"} when ready, its CPU time on
// SIGUSR2; SIGTERM cleans up.
const http = require('node:http');
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const { PassThrough } = require('node:stream');

const root = path.join(__dirname, '../..');
const cp = (p) => require(path.join(root, 'apps/control-plane/dist', p));
const ing = (p) => require(path.join(root, 'apps/ingestion/dist', p));
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/ingestion/dist')] }));

async function baseline() {
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      JSON.parse(Buffer.concat(chunks).toString('utf8'));
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(`${JSON.stringify({ port: server.address().port, writeKey: 'none' })}\n`);
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

async function hosted() {
  const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
  const { createLogger } = lib('@pipeline/logger');
  const { loadConfig } = lib('@pipeline/config');
  const { createKafka, createProducer, ensureTopics, kafkaConfigSchema } = lib('@pipeline/kafka');
  const { createRedis } = lib('@pipeline/redis');
  const logger = createLogger({ service: 'bench', stream: new PassThrough(), level: 'error' });

  const scratch = await createScratchDatabase(
    process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    'bench collect',
  );
  const dataSource = cp('database/data-source').createDataSource({ url: scratch.url, poolMax: 4 });
  await dataSource.initialize();
  await cp('database/data-source').migrate(dataSource);
  const token = randomBytes(24).toString('hex');
  const cpApp = cp('app').createApp({
    dataSource,
    logger,
    credentialKeys: `b:${randomBytes(32).toString('base64')}`,
    internalServiceToken: token,
  });
  const cpServer = http.createServer(cpApp);
  await new Promise((r) => cpServer.listen(0, '127.0.0.1', r));
  const account = await new (cp('accounts/account.service').AccountService)(dataSource).create('Bench');
  const writeKey = (
    await new (cp('write-keys/write-key.service').WriteKeyService)(dataSource).create(account.id, {
      name: 'bench',
    })
  ).key;

  const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'bench', logger });
  // BENCH_TOPIC: another benchmark's outbox (warehouse-load.js runs delivery behind this server).
  const topic = process.env.BENCH_TOPIC || `bench.collect.${Date.now()}`;
  await ensureTopics(kafka, [{ topic, numPartitions: 12 }], { replicationFactor: 1, logger });
  const producer = createProducer(kafka);
  await producer.connect();
  const redis = createRedis(
    { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
    { logger, keyPrefix: `bench:${topic}:` },
  );
  await redis.connect();

  const { CollectService } = ing('collect/collect-service');
  const { HostedAuthenticator } = ing('auth/hosted-authenticator');
  const { ControlPlaneClient } = lib('@pipeline/tenancy');
  const { OutboxPublisher } = ing('outbox/outbox-publisher');
  const { BatchDedupe } = ing('outbox/batch-dedupe');
  const { LocalBackstop, SharedRateLimiter, AuthAttemptLimiter } = ing('limits/rate-limits');
  const { StaticHealth } = ing('health/delivery-health');
  const collect = new CollectService({
    authenticator: new HostedAuthenticator(
      new ControlPlaneClient(`http://127.0.0.1:${cpServer.address().port}`, token, logger),
      { validTtlMs: 60_000, invalidTtlMs: 10_000 },
      logger,
    ),
    logger,
    hosted: {
      publisher: new OutboxPublisher(producer, { topic }),
      dedupe: new BatchDedupe(redis, logger),
      backstop: new LocalBackstop(1e9),
      shared: new SharedRateLimiter(redis, { eventsPerSecond: 1e9, eventsPerDay: 1e9 }, logger),
      authAttempts: new AuthAttemptLimiter(redis, 1e9),
    },
  });
  const app = ing('app').createApp({
    logger,
    collect,
    health: new StaticHealth(),
    sdk: null,
    simulate: { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
    clientAddress: ing('collect/client-address').clientAddressResolver(undefined),
  });
  const server = http.createServer(app);
  server.keepAliveTimeout = 65_000;
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(
    `${JSON.stringify({ port: server.address().port, writeKey, topic, accountId: account.id })}\n`,
  );
  process.on('SIGTERM', async () => {
    server.close();
    cpServer.close();
    await producer.disconnect();
    await redis.quit();
    const admin = kafka.admin();
    await admin.connect();
    if (!process.env.BENCH_TOPIC) await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await dataSource.destroy();
    await scratch.drop();
    process.exit(0);
  });
}

// The parent asks for this process's CPU time (user + system, microseconds) between runs: CPU
// per request compares the two servers even when they share the machine with the broker.
process.on('SIGUSR2', () => {
  const { user, system } = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ cpuMicros: user + system })}\n`);
});

(process.argv[2] === 'baseline' ? baseline() : hosted()).catch((error) => {
  console.error(error);
  process.exit(1);
});
