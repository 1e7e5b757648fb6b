// Child process of collect-load.js. `hosted`: starts the built ingestion service (see hosted()),
// resolving its write key at the built control plane, which runs in a process of its own
// (`control-plane`, on a scratch database). `baseline`: a bare node:http server that reads the
// body, parses it as JSON and answers 202. `floor`: the baseline plus the outbox publish (see
// floor()). Prints {"port", "writeKey", "pid"} when ready (pid: the measured process), its CPU
// time on SIGUSR2 (and the collector's pause time, process-probe.js); SIGTERM cleans up.
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
  process.stdout.write(
    `${JSON.stringify({ port: server.address().port, writeKey: 'none', pid: process.pid })}\n`,
  );
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
  process.stdout.write(
    `${JSON.stringify({ port: server.address().port, writeKey: 'none', pid: process.pid })}\n`,
  );
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

// The built ingestion service itself (apps/ingestion/dist/main.js, hosted mode, configured as in
// production but for limits set out of the way), in a process of its own with the probe
// preloaded, so that its CPU and peak RSS are the service's alone. This process starts it and
// the control plane, relays the probe's lines, and cleans up on SIGTERM. BENCH_SERVICE_NODE_ARGS
// (a JSON array) are the service's Node flags; BENCH_TOPIC_PREFIX its topics' prefix (another
// benchmark's outbox, as warehouse-load.js runs delivery behind it, or the outbox several
// services share, as capacity.js runs them).
async function hosted() {
  // BENCH_CONTROL_PLANE: the ready line of a control plane already running, which its owner
  // stops (capacity.js starts one for several services, which then resolve the same write key).
  const controlPlane = process.env.BENCH_CONTROL_PLANE
    ? { ready: JSON.parse(process.env.BENCH_CONTROL_PLANE), stop: () => undefined, exited: Promise.resolve() }
    : await startControlPlane();
  const { writeKey, token, accountId } = controlPlane.ready;
  const prefix = process.env.BENCH_TOPIC_PREFIX || `bench.collect.${Date.now()}.${process.pid}.`;
  const [port, metricsPort] = [await freePort(), await freePort()];
  const service = spawn(
    process.execPath,
    [
      ...JSON.parse(process.env.BENCH_SERVICE_NODE_ARGS || '[]'),
      '-r',
      path.join(__dirname, 'process-probe.js'),
      path.join(root, 'apps/ingestion/dist/main.js'),
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: {
        ...process.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        MANAGED_AUTH_ENABLED: 'true',
        CONTROL_PLANE_URL: `http://127.0.0.1:${controlPlane.ready.port}`,
        INTERNAL_SERVICE_TOKEN: token,
        REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
        KAFKA_TOPIC_PREFIX: prefix,
        // Out of the way: the benchmark measures the limits' cost, not their refusals.
        RATE_LIMIT_EVENTS_PER_SECOND: '1000000',
        RATE_LIMIT_LOCAL_BACKSTOP_EPS: '1000000',
        RATE_LIMIT_EVENTS_PER_DAY: '1000000000',
        AUTH_RESOLUTION_ATTEMPTS_PER_MINUTE: '100000',
        // The production default level (info): the access log's cost is measured.
        LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'info',
        OUTBOX_COMPRESSION: process.env.BENCH_COMPRESSION || 'none',
      },
    },
  );
  let stopping = false;
  const serviceExited = new Promise((resolve) => service.once('exit', resolve));
  service.once('exit', (code, signal) => {
    if (!stopping) {
      console.error(`the ingestion service exited (${code ?? signal})`);
      controlPlane.stop();
      process.exit(1);
    }
  });
  // The probe's lines go to the benchmark; the service's own log lines are dropped, or shown on
  // stderr with BENCH_SERVICE_LOG=1.
  readline.createInterface({ input: service.stdout }).on('line', (line) => {
    if (line.startsWith('{"cpuMicros"')) process.stdout.write(`${line}\n`);
    else if (process.env.BENCH_SERVICE_LOG === '1') process.stderr.write(`${line}\n`);
  });
  process.on('SIGUSR2', () => service.kill('SIGUSR2'));
  try {
    await waitUntilReady(`http://127.0.0.1:${port}/readyz`);
  } catch (error) {
    // Neither is left running behind this process.
    stopping = true;
    service.kill('SIGTERM');
    controlPlane.stop();
    throw error;
  }
  const debuggerOn = process.env.DEBUGGER_ENABLED !== 'false';
  process.stdout.write(
    `${JSON.stringify({ port, writeKey, accountId, pid: service.pid, topicPrefix: prefix, debugger: debuggerOn })}\n`,
  );
  process.removeAllListeners('SIGTERM');
  process.on('SIGTERM', async () => {
    stopping = true;
    const topics = await listTopics(prefix);
    // The topic's bytes in the broker's log directory (BENCH_KAFKA_LOG_DIR, the local broker's),
    // before it is deleted: what a codec saves on disk.
    if (process.env.BENCH_KAFKA_LOG_DIR) {
      let bytes = 0;
      for (const dir of fs.readdirSync(process.env.BENCH_KAFKA_LOG_DIR)) {
        if (!topics.some((topic) => dir.startsWith(`${topic}-`))) continue;
        for (const file of fs.readdirSync(path.join(process.env.BENCH_KAFKA_LOG_DIR, dir)))
          if (file.endsWith('.log'))
            bytes += fs.statSync(path.join(process.env.BENCH_KAFKA_LOG_DIR, dir, file)).size;
      }
      process.stdout.write(`${JSON.stringify({ topicBytes: bytes })}\n`);
    }
    service.kill('SIGTERM');
    controlPlane.stop();
    await Promise.all([serviceExited, controlPlane.exited]);
    if (!process.env.BENCH_TOPIC_PREFIX) await deleteTopics(topics);
    process.exit(0);
  });
}

async function freePort() {
  const server = require('node:net').createServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address();
  await new Promise((r) => server.close(r));
  return port;
}

/** Polls until `url` answers 200, for at most a minute. */
async function waitUntilReady(url) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(url).then(
      (res) => res.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} was not ready within a minute`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function kafkaAdmin(use) {
  const { createLogger } = lib('@pipeline/logger');
  const { loadConfig } = lib('@pipeline/config');
  const { createKafka, kafkaConfigSchema } = lib('@pipeline/kafka');
  const logger = createLogger({
    service: 'bench',
    stream: fs.createWriteStream('/dev/null'),
    level: 'error',
  });
  const admin = createKafka(loadConfig(kafkaConfigSchema, process.env), {
    clientId: 'bench',
    logger,
  }).admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

const listTopics = (prefix) =>
  kafkaAdmin(async (admin) => (await admin.listTopics()).filter((topic) => topic.startsWith(prefix))).catch(
    () => [],
  );
const deleteTopics = (topics) =>
  topics.length === 0
    ? Promise.resolve()
    : kafkaAdmin((admin) => admin.deleteTopics({ topics })).catch(() => undefined);

// The control plane on a scratch database with one account and write key, in its own process.
async function controlPlaneProcess() {
  const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
  const { createLogger } = lib('@pipeline/logger');
  const logger = createLogger({
    service: 'bench-control-plane',
    stream: process.env.BENCH_SERVICE_LOG === '1' ? process.stderr : fs.createWriteStream('/dev/null'),
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
  const { app: cpApp, services } = cp('composition').composeApi({
    dataSource,
    logger,
    credentialKeys: `b:${randomBytes(32).toString('base64')}`,
    internalTokens: new (cp('auth/internal-tokens').InternalTokens)([
      { token, caller: { caller: 'ingestion' } },
    ]),
  });
  // The default warehouse, as the control plane's start creates it: write keys resolve to it.
  await services.warehouses.bootstrap(process.env.WAREHOUSE_URL || scratch.url);
  let account;
  let handler =
    process.env.BENCH_REGULATED_SUBJECTS === undefined
      ? cpApp
      : servingRegulatedSubjects(cpApp, () => account?.id, Number(process.env.BENCH_REGULATED_SUBJECTS));
  if (process.env.BENCH_TRACKING_PLAN !== undefined)
    handler = bindingTrackingPlan(
      handler,
      () => cpServer.address().port,
      Number(process.env.BENCH_TRACKING_PLAN),
    );
  const cpServer = http.createServer(handler);
  await new Promise((r) => cpServer.listen(0, '127.0.0.1', r));
  account = await new (cp('accounts/account.service').AccountService)(dataSource).create('Bench');
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

/**
 * BENCH_REGULATED_SUBJECTS=<n>: the bench account's regulated subjects answered as n suppressed
 * keyed hashes (of ids the load never sends, so every event is still published and only the
 * check's cost differs), as POST /internal/v1/regulated-subjects answers them; the request is
 * otherwise the control plane's. Serialized once: what is measured is ingestion's side.
 */
function servingRegulatedSubjects(cpApp, accountIdOf, count) {
  const { subjectHash, subjectColumns } = lib('@pipeline/tenancy');
  const key = randomBytes(32);
  let answer;
  return (req, res) => {
    if (req.method !== 'POST' || req.url !== '/internal/v1/regulated-subjects') return cpApp(req, res);
    req.resume();
    req.on('end', () => {
      answer ??= JSON.stringify({
        data: {
          accountId: accountIdOf(),
          writeKeyId: '',
          hashKey: key.toString('base64'),
          // Half of each type: every identifier of every event is then hashed, the most a
          // request can cost (an account regulating user ids only hashes no anonymous id).
          ...subjectColumns(
            Array.from({ length: count }, (_, i) => {
              const type = i % 2 === 0 ? 'USER_ID' : 'ANONYMOUS_ID';
              return {
                hash: subjectHash(key, type, `bench-suppressed-${i}`),
                type,
                suppressed: true,
                deleteCutoff: null,
              };
            }),
          ),
        },
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
    });
  };
}

/**
 * BENCH_TRACKING_PLAN=<n>: the bench write key binds a plan of n track rules (`Event <k>
 * Happened`, each: sku a string with a pattern, price a number from 0, currency one of four,
 * all three required, nothing else allowed) plus a common schema, version 1, policy allow: the
 * write-key lookup is the control plane's with the binding added, and POST
 * /internal/v1/tracking-plan-versions answers that plan. What is measured is ingestion's side.
 */
function bindingTrackingPlan(cpApp, portOf, rules) {
  const planId = '00000000-0000-4000-8000-00000000b1a9';
  const plan = {
    common: { type: 'object', properties: { context: { type: 'object', required: ['library'] } } },
    rules: Array.from({ length: rules }, (_, k) => ({
      type: 'track',
      name: `Event ${k} Happened`,
      schema: {
        type: 'object',
        required: ['properties'],
        properties: {
          properties: {
            type: 'object',
            additionalProperties: false,
            required: ['sku', 'price', 'currency'],
            properties: {
              sku: { type: 'string', pattern: '^SKU-[0-9]+$' },
              price: { type: 'number', minimum: 0 },
              currency: { enum: ['USD', 'EUR', 'GBP', 'JPY'] },
            },
          },
        },
      },
    })),
  };
  const binding = { planId, binding: 'latest', version: 1, policy: { actions: {} } };
  let answer;
  const bodyOf = (req) =>
    new Promise((resolve) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
  return (req, res) => {
    if (req.method === 'POST' && req.url === '/internal/v1/tracking-plan-versions') {
      bodyOf(req).then(() => {
        answer ??= JSON.stringify({
          data: { planId, version: 1, hash: lib('@pipeline/tracking-plans').planHash(plan), plan },
        });
        res.writeHead(200, { 'content-type': 'application/json' }).end(answer);
      });
      return undefined;
    }
    if (
      req.method !== 'POST' ||
      req.url !== '/internal/v1/write-keys/resolve' ||
      req.headers['x-bench-inner']
    )
      return cpApp(req, res);
    bodyOf(req).then(async (body) => {
      const inner = await fetch(`http://127.0.0.1:${portOf()}${req.url}`, {
        method: 'POST',
        headers: { ...req.headers, 'x-bench-inner': '1' },
        body,
      });
      const text = await inner.text();
      const parsed = inner.ok ? JSON.parse(text) : undefined;
      if (parsed?.data) parsed.data.trackingPlan = binding;
      res
        .writeHead(inner.status, { 'content-type': 'application/json' })
        .end(parsed ? JSON.stringify(parsed) : text);
    });
    return undefined;
  };
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

// baseline and floor answer the parent's SIGUSR2 themselves; hosted relays its service's.
if (process.argv[2] === 'baseline' || process.argv[2] === 'floor') require('./process-probe');

const modes = { baseline, floor, hosted, 'control-plane': controlPlaneProcess };
(modes[process.argv[2]] ?? hosted)().catch((error) => {
  console.error(error);
  process.exit(1);
});
