// Child process of collect-load.js. `hosted`: the built ingestion service in hosted mode
// (real Kafka with acks=-1, Redis dedupe, limits set out of the way), resolving its write key at
// the built control plane, which runs in a process of its own (`control-plane`, on a scratch
// database) so that this process's CPU and peak RSS are ingestion's alone. `baseline`: a bare node:http server that reads the body,
// parses it as JSON and answers 202. `floor`: the baseline plus the outbox publish (see floor()). Prints {"port", "writeKey"} when ready, its CPU time on
// SIGUSR2 (and the collector's pause time); SIGTERM cleans up.
const http = require('node:http');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const readline = require('node:readline');
const fs = require('node:fs');

// BENCH_ROOT: another checkout's build (collect-load.js --compare of a lever's before and after).
const root = process.env.BENCH_ROOT || path.join(__dirname, '../..');
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
  process.on('SIGTERM', () => process.exit(0));
}

// The least that the design asks of /collect, with nothing of the product's own: read the body,
// JSON.parse it, and publish its events as one outbox record through the same group-commit
// publisher (kafkajs, acks -1) before answering 202. No write key, validation, limits, dedupe,
// debugger, metrics or logging. Its CPU per request against the baseline's is the floor that
// kafkajs and the acknowledgement rule put under the hosted service.
async function floor() {
  const { createLogger } = lib('@pipeline/logger');
  const { loadConfig } = lib('@pipeline/config');
  const { createKafka, createProducer, ensureTopics, kafkaConfigSchema } = lib('@pipeline/kafka');
  const logger = createLogger({
    service: 'bench-floor',
    stream: fs.createWriteStream('/dev/null'),
    level: 'error',
  });
  const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'bench-floor', logger });
  const topic = `bench.floor.${Date.now()}`;
  await ensureTopics(kafka, [{ topic, numPartitions: 12 }], { replicationFactor: 1, logger });
  const producer = createProducer(kafka);
  await producer.connect();
  const { OutboxPublisher } = ing('outbox/outbox-publisher');
  const publisher = new OutboxPublisher(producer, { topic, compression: 'none' });
  let sequence = 0;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const { batch } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      sequence += 1;
      publisher
        .publish([{ key: String(sequence % 1024), value: JSON.stringify({ v: 2, events: batch }) }])
        .then(
          () => res.writeHead(202, { 'content-type': 'application/json' }).end('{"ok":true}'),
          () => res.writeHead(503, { 'content-type': 'application/json' }).end('{"ok":false}'),
        );
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  process.stdout.write(`${JSON.stringify({ port: server.address().port, writeKey: 'none' })}\n`);
  process.on('SIGTERM', async () => {
    server.close();
    await producer.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    process.exit(0);
  });
}

async function hosted() {
  // Tracing as ingestion's main.ts starts it, only when OTEL_* asks for it (docs/operations.md,
  // "Tracing"), before the services' modules load.
  lib('@pipeline/telemetry').startTracing('ingestion');
  const { createLogger } = lib('@pipeline/logger');
  const { loadConfig } = lib('@pipeline/config');
  const { createKafka, createProducer, ensureTopics, kafkaConfigSchema } = lib('@pipeline/kafka');
  const { createRedis } = lib('@pipeline/redis');
  // The production default level (info), written to /dev/null: the access log's cost is measured,
  // not the terminal's. BENCH_LOG_LEVEL=error leaves out every line below error.
  const logger = createLogger({
    service: 'bench',
    stream: fs.createWriteStream('/dev/null'),
    level: process.env.BENCH_LOG_LEVEL || 'info',
  });

  const controlPlane = await startControlPlane();
  const { writeKey, token } = controlPlane.ready;

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
  // The metrics as main.ts wires them (when the build has them).
  const metricsModule = (() => {
    try {
      return ing('metrics/ingestion-metrics');
    } catch {
      return undefined;
    }
  })();
  const metrics = metricsModule && new metricsModule.IngestionMetrics({ defaultMetrics: true });
  // BENCH_COMPRESSION: the outbox records' codec (none, gzip or lz4); BENCH_MAX_IN_FLIGHT: the
  // publisher's sends in flight at once (its default unless given).
  const publisher = new OutboxPublisher(producer, {
    topic,
    compression: process.env.BENCH_COMPRESSION || 'none',
    maxInFlight: process.env.BENCH_MAX_IN_FLIGHT ? Number(process.env.BENCH_MAX_IN_FLIGHT) : undefined,
  });
  metrics?.watchOutbox(() => publisher.pending);
  // The live debugger's recorder as main.ts wires it (on by default; DEBUGGER_ENABLED=false
  // leaves it out), on its own connection, with the production defaults unless the
  // DEBUGGER_* variables say otherwise.
  let recorder;
  let debugRedis;
  const { DebugStreamWriter } = lib('@pipeline/redis');
  if (process.env.DEBUGGER_ENABLED !== 'false' && DebugStreamWriter) {
    debugRedis = createRedis({ REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' }, { logger });
    await debugRedis.connect();
    const writer = new DebugStreamWriter(
      debugRedis,
      {
        maxLen: Number(process.env.DEBUGGER_EVENTS_PER_KEY || 500),
        ttlSeconds: Number(process.env.DEBUGGER_TTL_SECONDS || 86400),
        maxPerSecond: Number(process.env.DEBUGGER_MAX_EVENTS_PER_SECOND || 50),
      },
      logger,
    );
    metrics?.watchDebugger?.(() => writer.stats);
    recorder = new (ing('debugger/debug-recorder').DebugRecorder)(writer);
  }
  const collect = new CollectService({
    recorder,
    authenticator: new HostedAuthenticator(
      new ControlPlaneClient(`http://127.0.0.1:${controlPlane.ready.port}`, token, logger),
      { validTtlMs: 60_000, invalidTtlMs: 10_000, onCacheResult: metrics?.writeKeyCache },
      logger,
    ),
    logger,
    metrics,
    hosted: {
      publisher,
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
    `${JSON.stringify({ port: server.address().port, writeKey, topic, accountId: controlPlane.ready.accountId, debugger: Boolean(recorder) })}\n`,
  );
  process.on('SIGTERM', async () => {
    // The topic's bytes in the broker's log directory (BENCH_KAFKA_LOG_DIR, the local broker's),
    // before it is deleted: what a codec saves on disk.
    if (process.env.BENCH_KAFKA_LOG_DIR) {
      let bytes = 0;
      for (const dir of fs.readdirSync(process.env.BENCH_KAFKA_LOG_DIR)) {
        if (!dir.startsWith(`${topic}-`)) continue;
        for (const file of fs.readdirSync(path.join(process.env.BENCH_KAFKA_LOG_DIR, dir)))
          if (file.endsWith('.log'))
            bytes += fs.statSync(path.join(process.env.BENCH_KAFKA_LOG_DIR, dir, file)).size;
      }
      process.stdout.write(`${JSON.stringify({ topicBytes: bytes })}\n`);
    }
    server.close();
    controlPlane.stop();
    await producer.disconnect();
    await redis.quit();
    debugRedis?.disconnect();
    const admin = kafka.admin();
    await admin.connect();
    if (!process.env.BENCH_TOPIC) await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect();
    await controlPlane.exited;
    process.exit(0);
  });
}

// The control plane on a scratch database with one account and write key, in its own process.
async function controlPlaneProcess() {
  const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
  const { createLogger } = lib('@pipeline/logger');
  const logger = createLogger({
    service: 'bench-control-plane',
    stream: fs.createWriteStream('/dev/null'),
    level: 'error',
  });
  const scratch = await createScratchDatabase(
    process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    'bench collect',
  );
  const dataSource = cp('data-model').createDataSource({ url: scratch.url, poolMax: 4 });
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
  process.stdout.write(
    `${JSON.stringify({ port: cpServer.address().port, writeKey, token, accountId: account.id })}\n`,
  );
  process.on('SIGTERM', async () => {
    cpServer.close();
    await dataSource.destroy();
    await scratch.drop();
    process.exit(0);
  });
}

function startControlPlane() {
  const child = spawn(process.execPath, [__filename, 'control-plane'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input: child.stdout });
    lines.once('line', (line) =>
      resolve({ ready: JSON.parse(line), stop: () => child.kill('SIGTERM'), exited }),
    );
    child.once('exit', (code) =>
      reject(new Error(`the bench's control plane exited with ${code} before it was ready`)),
    );
  });
}

// The parent asks for this process's CPU time (user + system, microseconds) between runs: CPU
// per request compares the two servers even when they share the machine with the broker.
// The garbage collector's pause time, summed: how a heap setting (e.g. --max-semi-space-size)
// trades memory for CPU shows here with less noise than in the CPU time of the whole process.
let gcMicros = 0;
new (require('node:perf_hooks').PerformanceObserver)((list) => {
  for (const entry of list.getEntries()) gcMicros += entry.duration * 1000;
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  const { user, system } = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ cpuMicros: user + system, gcMicros: Math.round(gcMicros) })}\n`);
});

const modes = { baseline, floor, hosted, 'control-plane': controlPlaneProcess };
(modes[process.argv[2]] ?? hosted)().catch((error) => {
  console.error(error);
  process.exit(1);
});
