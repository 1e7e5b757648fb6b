// Capacity benchmark: how ingestion and the warehouse consumer scale with their process count
// on this machine, against one Kafka broker (KAFKA_BROKERS) and PostgreSQL (DATABASE_URL).
//
//   pnpm bench:capacity [--ingestion=1,2,4] [--warehouse=1,2,4] [--seconds=10] [--warmup=5]
//                       [--connections=32] [--events=100000] [--timeout=300] [--help]
//
// Ingestion, for each N of --ingestion: N built ingestion services in hosted mode (as
// bench:collect starts one: the image's Node flags, Redis, the debugger on), each on its own
// port, sharing one outbox (12 partitions) and one control plane that resolves their write key.
// One autocannon load generator (this process) gives each service --connections connections,
// round robin, posting batches of 20 events with fresh messageIds: --warmup seconds, then a
// timed run of --seconds. Prints events/s acknowledged (202), p50 and p99, the CPU seconds of
// the N services over the run (user + system, /proc/<pid>/stat), events per CPU second, and each
// service's peak RSS (VmHWM).
//
// Warehouse, for each M of --warehouse: a fresh outbox topic (12 partitions) filled with
// --events events in records of 20 (as bench:warehouse fills it), then M `delivery --destination
// warehouse` processes in one consumer group, timed from their start until every event is in
// the account's events table. Prints events/s (from the start, and from the first row), the CPU
// seconds of the M processes (since their start), events per CPU second, and each one's peak RSS.
//
// Each stage ends with its scaling linearity, rate(N) / (N x rate(1)), and per-core efficiency,
// per-core(N) / per-core(1) (against the smallest count when 1 is not measured). Next to them:
// the machine's cores (os.availableParallelism()), how many of them were busy, and the CPU of the
// load generator, the broker, Redis and PostgreSQL, which share those cores: on 2 cores, 4
// processes cannot scale, and the output says so. The last line is every result as one JSON
// object. Exits 1 when a stage fails (an answer other than 202, a socket error, events missing
// from the warehouse after --timeout seconds). Every process it started is stopped on exit,
// on an error and on Ctrl-C.
//
// A small run while developing:
//   pnpm bench:capacity --seconds=3 --events=20000 --ingestion=1,2 --warehouse=1,2
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomUUID } = require('node:crypto');
const { PassThrough } = require('node:stream');
const processes = require('./bench-processes');
const { EVENTS_PER_REQUEST, loadCollect } = require('./collect-requests');
const {
  PER_RECORD,
  makeEvents,
  receiptFor,
  fillOutbox,
  countEvents,
  deleteDeliveryTopics,
} = require('./bench-outbox');

const { root } = processes;
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/delivery/dist')] }));

const defaults = {
  ingestion: '1,2,4',
  warehouse: '1,2,4',
  seconds: '10',
  warmup: '5',
  connections: '32',
  events: '100000',
  timeout: '300',
};

function usage() {
  const lines = fs.readFileSync(__filename, 'utf8').split('\n');
  return lines
    .slice(
      0,
      lines.findIndex((line) => !line.startsWith('//')),
    )
    .map((line) => line.replace(/^\/\/ ?/, ''))
    .join('\n');
}

/** A wrong argument: told in one line, without a stack. */
const usageError = (message) =>
  Object.assign(new Error(`${message} (--help for the usage)`), { usage: true });

/** --name=value options over the defaults; a count list is `1,2,4` ('' measures no count). */
function parseOptions(argv) {
  const options = { ...defaults };
  for (const arg of argv) {
    const match = /^--([a-z]+)=(.*)$/.exec(arg);
    if (!match || !(match[1] in defaults))
      throw usageError(`unknown argument ${arg}; options: ${Object.keys(defaults).map((k) => `--${k}`)}`);
    options[match[1]] = match[2];
  }
  const positive = (name) => {
    const value = Number(options[name]);
    if (!Number.isInteger(value) || value <= 0) throw usageError(`--${name} must be a positive integer`);
    return value;
  };
  const counts = (name) =>
    options[name] === ''
      ? []
      : options[name].split(',').map((part) => {
          const value = Number(part);
          if (!Number.isInteger(value) || value <= 0)
            throw usageError(`--${name} is a list of process counts like 1,2,4, not ${options[name]}`);
          return value;
        });
  return {
    ingestion: counts('ingestion'),
    warehouse: counts('warehouse'),
    seconds: positive('seconds'),
    warmup: options.warmup === '0' ? 0 : positive('warmup'),
    connections: positive('connections'),
    events: positive('events'),
    timeout: positive('timeout'),
  };
}

const sum = (values) => values.reduce((a, b) => a + b, 0);
const mb = (kb) => (kb === null ? null : Math.round(kb / 1024));

/**
 * CPU seconds of the services that share the machine with the measured processes, as a
 * snapshot per pid: the broker (when it runs here), Redis and PostgreSQL (its backends come
 * and go; one that exits during a run takes its time with it, so theirs is a lower bound).
 */
function neighbours(brokerPid) {
  const snapshot = (pids) => new Map(pids.map((pid) => [pid, processes.cpuSeconds(pid)]));
  return {
    broker: snapshot(brokerPid ? [brokerPid] : []),
    redis: snapshot(processes.pidsNamed('redis-server')),
    postgres: snapshot(processes.pidsNamed('postgres')),
  };
}
function neighboursUsed(before, after) {
  const used = (name) =>
    after[name].size === 0 && before[name].size === 0
      ? null
      : sum([...after[name]].map(([pid, cpu]) => cpu - (before[name].get(pid) ?? 0)));
  return { broker: used('broker'), redis: used('redis'), postgres: used('postgres') };
}

/** What a run cost the machine: its busy cores, this process's CPU (the load generator) and the neighbours'. */
function startMeter(brokerPid) {
  const machine = processes.machineCpuSeconds();
  const self = process.cpuUsage();
  const others = neighbours(brokerPid);
  const started = Date.now();
  // measuredCpuSeconds: the measured processes' over the same time, to tell what else ran.
  return (measuredCpuSeconds) => {
    const seconds = (Date.now() - started) / 1000;
    const { user, system } = process.cpuUsage(self);
    const used = neighboursUsed(others, neighbours(brokerPid));
    const machineBusyCores = (processes.machineCpuSeconds().busy - machine.busy) / seconds;
    const loadGeneratorCpuSeconds = (user + system) / 1e6;
    const accounted =
      measuredCpuSeconds + loadGeneratorCpuSeconds + sum(Object.values(used).map((v) => v ?? 0));
    return {
      machineBusyCores,
      // Work nobody here started (another benchmark, a build): the numbers are not this bench's alone.
      otherBusyCores: Math.max(0, machineBusyCores - accounted / seconds),
      loadGeneratorCpuSeconds,
      brokerCpuSeconds: used.broker,
      redisCpuSeconds: used.redis,
      postgresCpuSeconds: used.postgres,
    };
  };
}

async function kafkaAdmin(kafka, use) {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect();
  }
}

/** Deletes the topics whose names start with one of `prefixes`. */
const deleteTopicsUnder = (kafka, prefixes) =>
  kafkaAdmin(kafka, async (admin) => {
    const topics = (await admin.listTopics()).filter((topic) => prefixes.some((p) => topic.startsWith(p)));
    if (topics.length > 0) await admin.deleteTopics({ topics });
  }).catch(() => undefined);

/** N ingestion services on one outbox and control plane, loaded together. */
async function ingestionRun(n, options, context) {
  const prefix = `bench.capacity.${Date.now()}.n${n}.`;
  context.ingestionPrefixes.push(prefix);
  const { port, writeKey, token, accountId } = context.controlPlane;
  const env = {
    BENCH_TOPIC_PREFIX: prefix,
    BENCH_CONTROL_PLANE: JSON.stringify({ port, writeKey, token, accountId }),
    DEBUGGER_ENABLED: 'true',
  };
  const servers = [];
  try {
    // One after the other: the first creates the shared topics, the others find them.
    for (let i = 0; i < n; i += 1) servers.push(await processes.startCollectServer('hosted', env));
    const load = (seconds) =>
      loadCollect({
        urls: servers.map((server) => `http://127.0.0.1:${server.port}/collect`),
        connections: n * options.connections,
        seconds,
        headers: { 'x-write-key': writeKey },
      });
    if (options.warmup > 0) await load(options.warmup);
    const cpuBefore = servers.map((server) => processes.cpuSeconds(server.pid));
    const meter = startMeter(context.brokerPid);
    const result = await load(options.seconds);
    const cpu = servers.map((server, i) => processes.cpuSeconds(server.pid) - cpuBefore[i]);
    const machine = meter(sum(cpu));
    const events = result['2xx'] * EVENTS_PER_REQUEST;
    const cpuSeconds = sum(cpu);
    return {
      processes: n,
      connections: n * options.connections,
      seconds: result.duration,
      events,
      eventsPerSecond: events / result.duration,
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      cpuSeconds,
      cpuSecondsPerProcess: cpu,
      eventsPerCpuSecond: events / cpuSeconds,
      peakRssMbPerProcess: servers.map((server) => mb(processes.peakRssKb(server.pid))),
      ...machine,
      failure:
        result['2xx'] === 0
          ? 'no request was acknowledged'
          : result.non2xx > 0 || result.errors > 0
            ? `${result.non2xx} answers other than 2xx, ${result.errors} socket errors`
            : null,
    };
  } finally {
    await Promise.all(servers.map((server) => processes.stopProcess(server.child)));
    await deleteTopicsUnder(context.kafka, [prefix]);
  }
}

/** M warehouse consumers in one group on a filled outbox, timed until every event is stored. */
async function warehouseRun(m, options, context) {
  const { pipelineTopics, prefixedTopic, ensureTopics } = lib('@pipeline/kafka');
  const { warehouseSchemaFor } = lib('@pipeline/tenancy');
  const prefix = `bench-capacity-${Date.now()}-m${m}.`;
  context.prefixes.push(prefix);
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix);
  await ensureTopics(context.kafka, [outbox], { replicationFactor: 1, logger: context.logger });
  const accountId = randomUUID();
  const schema = warehouseSchemaFor(accountId);
  await fillOutbox(context.kafka, outbox.topic, receiptFor(accountId), makeEvents(options.events));

  const meter = startMeter(context.brokerPid);
  const started = Date.now();
  const consumers = Array.from({ length: m }, () =>
    processes.startDelivery('warehouse', {
      KAFKA_TOPIC_PREFIX: prefix,
      WAREHOUSE_URL: context.db.url,
      DELIVERY_SESSION_TIMEOUT_MS: '6000',
    }),
  );
  try {
    let firstRow;
    // Starting node, joining the group, the first rebalance: paid once per process.
    let cpuToFirstRow = null;
    let stored = 0;
    const deadline = started + options.timeout * 1000;
    while (stored < options.events && Date.now() < deadline) {
      const gone = consumers.find((child) => child.exitCode !== null || child.signalCode !== null);
      if (gone) break;
      stored = await countEvents(context.client, schema);
      if (stored > 0 && firstRow === undefined) {
        firstRow = Date.now();
        cpuToFirstRow = sum(consumers.map((child) => processes.cpuSeconds(child.pid)));
      }
      if (stored < options.events) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const done = Date.now();
    const seconds = (done - started) / 1000;
    const cpu = consumers.map((child) => processes.cpuSeconds(child.pid));
    const cpuSeconds = sum(cpu);
    const machine = meter(cpuSeconds);
    const gone = consumers.filter((child) => child.exitCode !== null || child.signalCode !== null);
    const failure =
      gone.length > 0
        ? `${gone.length} of the ${m} consumers exited (${gone.map((c) => c.exitCode ?? c.signalCode)})`
        : stored < options.events
          ? `${options.events - stored} of ${options.events} events missing after ${options.timeout} s`
          : stored > options.events
            ? `${stored} rows for ${options.events} events`
            : null;
    return {
      processes: m,
      events: options.events,
      stored,
      seconds,
      eventsPerSecond: stored / seconds,
      secondsToFirstRow: firstRow === undefined ? null : (firstRow - started) / 1000,
      eventsPerSecondFromFirstRow: firstRow === undefined ? null : stored / ((done - firstRow) / 1000),
      cpuSeconds,
      cpuSecondsPerProcess: cpu,
      cpuSecondsToFirstRow: cpuToFirstRow,
      eventsPerCpuSecond: stored / cpuSeconds,
      peakRssMbPerProcess: consumers.map((child) => mb(processes.peakRssKb(child.pid))),
      ...machine,
      failure,
    };
  } finally {
    await Promise.all(consumers.map((child) => processes.stopProcess(child)));
  }
}

const fixed = (value, digits = 0) =>
  value === null || value === undefined || Number.isNaN(value) ? '-' : value.toFixed(digits);

function printTable(header, rows) {
  const widths = header.map((title, i) =>
    Math.max(title.length, ...rows.map((row) => String(row[i]).length)),
  );
  const line = (cells) => cells.map((cell, i) => String(cell).padStart(widths[i])).join('  ');
  console.log(line(header));
  for (const row of rows) console.log(line(row));
}

/** rate(N) / (N/base x rate(base)) and per-core(N) / per-core(base), base the smallest count. */
function scaling(results) {
  const ok = results.filter((r) => !r.failure);
  if (ok.length === 0) return [];
  const base = ok.reduce((a, b) => (b.processes < a.processes ? b : a));
  return ok.map((r) => ({
    processes: r.processes,
    linearity: r.eventsPerSecond / ((r.processes / base.processes) * base.eventsPerSecond),
    perCoreEfficiency: r.eventsPerCpuSecond / base.eventsPerCpuSecond,
    base: base.processes,
  }));
}

function printScaling(results, cores, name) {
  for (const s of scaling(results)) {
    const r = results.find((x) => x.processes === s.processes);
    const saturated = r.machineBusyCores >= 0.85 * cores;
    console.log(
      `  ${name} x${s.processes}: linearity rate(${s.processes}) / (${s.processes / s.base} x rate(${s.base})) = ${fixed(s.linearity, 2)}, per-core efficiency ${fixed(s.perCoreEfficiency, 2)}; ${fixed(r.machineBusyCores, 2)} of ${cores} cores busy${saturated ? ' (machine saturated: the rate is bounded by the cores, not by the service)' : ''}${s.processes > cores ? `; ${s.processes} processes on ${cores} cores cannot run at once` : ''}${r.otherBusyCores >= 0.25 ? `; ${fixed(r.otherBusyCores, 2)} cores busy with work outside this bench` : ''}`,
    );
  }
}

function printIngestion(results, cores) {
  console.log('\nIngestion (hosted /collect, batches of 20 events, 202 after Kafka acks)');
  printTable(
    [
      'N',
      'events/s',
      'p50 ms',
      'p99 ms',
      'CPU s',
      'cores used',
      'events/CPU s',
      'peak RSS MB each',
      'loadgen CPU s',
      'broker CPU s',
      'redis CPU s',
      'busy cores',
      'other cores',
      'failure',
    ],
    results.map((r) => [
      r.processes,
      fixed(r.eventsPerSecond),
      r.p50Ms,
      r.p99Ms,
      fixed(r.cpuSeconds, 1),
      fixed(r.cpuSeconds / r.seconds, 2),
      fixed(r.eventsPerCpuSecond),
      r.peakRssMbPerProcess.join('/'),
      fixed(r.loadGeneratorCpuSeconds, 1),
      fixed(r.brokerCpuSeconds, 1),
      fixed(r.redisCpuSeconds, 1),
      fixed(r.machineBusyCores, 2),
      fixed(r.otherBusyCores, 2),
      r.failure ?? '-',
    ]),
  );
  printScaling(results, cores, 'ingestion');
}

function printWarehouse(results, cores) {
  console.log(
    '\nWarehouse (delivery --destination warehouse, one consumer group, from start to the last row)',
  );
  printTable(
    [
      'M',
      'events/s',
      'seconds',
      'first row s',
      'events/s after it',
      'CPU s',
      'of it to first row',
      'events/CPU s',
      'peak RSS MB each',
      'broker CPU s',
      'postgres CPU s',
      'busy cores',
      'other cores',
      'failure',
    ],
    results.map((r) => [
      r.processes,
      fixed(r.eventsPerSecond),
      fixed(r.seconds, 2),
      fixed(r.secondsToFirstRow, 2),
      fixed(r.eventsPerSecondFromFirstRow),
      fixed(r.cpuSeconds, 1),
      fixed(r.cpuSecondsToFirstRow, 1),
      fixed(r.eventsPerCpuSecond),
      r.peakRssMbPerProcess.join('/'),
      fixed(r.brokerCpuSeconds, 1),
      fixed(r.postgresCpuSeconds, 1),
      fixed(r.machineBusyCores, 2),
      fixed(r.otherBusyCores, 2),
      r.failure ?? '-',
    ]),
  );
  printScaling(results, cores, 'warehouse');
}

async function main() {
  if (process.argv.includes('--help')) {
    console.log(usage());
    return 0;
  }
  const options = parseOptions(process.argv.slice(2));
  const cores = os.availableParallelism();
  const { createKafka, kafkaConfigSchema } = lib('@pipeline/kafka');
  const { loadConfig } = lib('@pipeline/config');
  const { createLogger } = lib('@pipeline/logger');
  const logger = createLogger({ service: 'bench', stream: new PassThrough(), level: 'error' });
  const kafkaConfig = loadConfig(kafkaConfigSchema, process.env);
  const kafka = createKafka(kafkaConfig, { clientId: 'bench-capacity', logger });
  const brokerPort = Number(kafkaConfig.KAFKA_BROKERS[0].split(':').pop());
  const brokerPid = processes.kafkaBrokerPid(brokerPort);
  const context = { kafka, logger, brokerPid, prefixes: [], ingestionPrefixes: [] };
  // Interrupted, the bench deletes what it created in the broker and PostgreSQL.
  let scratch;
  processes.onInterrupt(async () => {
    await deleteTopicsUnder(kafka, context.ingestionPrefixes);
    await deleteDeliveryTopics(kafka, 'warehouse', context.prefixes);
    await scratch?.drop();
  });
  const largest = Math.max(0, ...options.ingestion, ...options.warehouse);
  console.log(
    `capacity: ${cores} cores (os.availableParallelism()), node ${process.version}; the Kafka broker ${brokerPid ? `runs here (pid ${brokerPid})` : 'was not found on this machine'}; ingestion ${options.ingestion.join(',') || 'none'} x ${options.connections} connections, ${options.warmup} s warm-up + ${options.seconds} s; warehouse ${options.warehouse.join(',') || 'none'} x ${options.events} events`,
  );
  if (largest > cores)
    console.log(
      `note: ${largest} processes on ${cores} cores, which they share with the load generator, the broker, Redis and PostgreSQL, cannot scale: past ${cores} the rows below measure contention for the cores, not the service's limit.`,
    );

  const results = { cores, node: process.version, options, ingestion: [], warehouse: [] };
  if (options.ingestion.length > 0) {
    const controlPlane = await processes.startControlPlane();
    try {
      for (const n of options.ingestion) {
        const result = await ingestionRun(n, options, { ...context, controlPlane });
        results.ingestion.push(result);
        console.log(
          `ingestion x${n}: ${fixed(result.eventsPerSecond)} events/s, p99 ${result.p99Ms} ms, ${fixed(result.cpuSeconds, 1)} CPU s, ${fixed(result.eventsPerCpuSecond)} events per CPU s${result.failure ? `; FAILED: ${result.failure}` : ''}`,
        );
      }
    } finally {
      await processes.stopProcess(controlPlane.child);
    }
  }

  if (options.warehouse.length > 0) {
    const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
    const { Client } = require(require.resolve('pg', { paths: [path.join(root, 'libs/destinations')] }));
    const db = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'bench capacity',
    );
    scratch = db;
    const client = new Client({ connectionString: db.url });
    await client.connect();
    try {
      for (const m of options.warehouse) {
        const result = await warehouseRun(m, options, { ...context, db, client });
        results.warehouse.push(result);
        console.log(
          `warehouse x${m}: ${fixed(result.eventsPerSecond)} events/s (${result.stored} in ${fixed(result.seconds, 2)} s), ${fixed(result.cpuSeconds, 1)} CPU s, ${fixed(result.eventsPerCpuSecond)} events per CPU s${result.failure ? `; FAILED: ${result.failure}` : ''}`,
        );
      }
    } finally {
      await client.end();
      await deleteDeliveryTopics(kafka, 'warehouse', context.prefixes).catch(() => undefined);
      scratch = undefined;
      await db.drop();
    }
  }

  if (results.ingestion.length > 0) printIngestion(results.ingestion, cores);
  if (results.warehouse.length > 0) printWarehouse(results.warehouse, cores);
  console.log(
    `\nRecords of ${PER_RECORD} events; CPU s is the measured processes' user + system time; events/CPU s is events per CPU second of those processes alone (per core). busy cores: the whole machine's, of ${cores}; other cores: those busy with work this bench did not start or measure (another benchmark, a build), which makes its numbers lower than on an idle machine.`,
  );
  const failures = [...results.ingestion, ...results.warehouse].filter((r) => r.failure);
  results.ingestionScaling = scaling(results.ingestion);
  results.warehouseScaling = scaling(results.warehouse);
  console.log(JSON.stringify({ capacity: results }));
  if (failures.length > 0) {
    console.error(`${failures.length} run(s) failed`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => process.exit(code),
  async (error) => {
    console.error(error.usage ? error.message : error);
    await processes.stopAll();
    process.exit(1);
  },
);
