// The processes the benchmarks start and what they read of them: the built ingestion service in
// a server of collect-server.js, the bench's control plane that resolves its write keys, the
// built `delivery` consumers, and each process's CPU time and peak RSS from /proc. Shared by
// collect-load.js, warehouse-load.js and capacity.js, so that each measures the same processes
// started the same way.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const root = path.join(__dirname, '../..');
const collectServer = path.join(__dirname, 'collect-server.js');

// The services start with the Node flags of their images (tools/deploy/node-flags.mjs), so
// that what a bench measures is what ships.
const imageFlags = (image) => require('../deploy/node-flags.mjs').nodeFlags(image);

// Every child still running, so that a bench that fails or is interrupted leaves none behind.
const children = new Set();
function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Resolves when the child has exited (at once when it already has). */
function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', resolve));
}

// Each child is sent SIGTERM once: a second one would run its cleanup twice (a control plane
// that drops its scratch database would fail half-way through).
const stopping = new WeakMap();

/** SIGTERM, so that it cleans up (scratch databases, topics); SIGKILL after graceMs. */
function stopProcess(child, graceMs = 15_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  if (!stopping.has(child)) {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    stopping.set(
      child,
      exited(child).then(() => clearTimeout(timer)),
    );
  }
  return stopping.get(child);
}

// What a bench cleans up itself (topics, a scratch database) when it is interrupted, after its
// children have stopped.
const cleanups = [];
/** Runs `cleanup` when the bench is interrupted (Ctrl-C, SIGTERM), after its children stopped. */
const onInterrupt = (cleanup) => cleanups.push(cleanup);

/** Stops every child this process started and has not stopped yet. */
const stopAll = () => Promise.all([...children].map((child) => stopProcess(child)));

// Ctrl-C or a SIGTERM to the bench stops its children first and waits for them; when the bench
// exits another way (an error), each child still running is sent SIGTERM, not SIGKILL, so that
// it stops the processes it started itself and drops its scratch database.
let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`${signal}: stopping the bench's processes`);
    stopAll()
      .then(() => Promise.all(cleanups.map((cleanup) => Promise.resolve(cleanup()).catch(() => undefined))))
      .finally(() => process.exit(130));
  });
process.on('exit', () => {
  for (const child of children) if (!stopping.has(child)) child.kill('SIGTERM');
});

/**
 * A server of collect-server.js in `mode` (hosted, baseline, floor or control-plane), with `env`
 * on top of this process's. The hosted service runs with the flags of ingestion's image unless
 * BENCH_NODE_FLAGS (in env or this process's environment) replaces them; BENCH_CPU_PROF_DIR
 * profiles the measured process. Resolves with its ready line ({ port, writeKey, pid, ... }; pid:
 * the measured process, which for `hosted` is the ingestion service collect-server.js starts),
 * the child, and cpuMicros(): the measured process's CPU and GC time, asked over SIGUSR2.
 * onLine receives every other line it prints later.
 */
function startCollectServer(mode, env = {}, onLine = () => undefined) {
  const profile = process.env.BENCH_CPU_PROF_DIR
    ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF_DIR}`]
    : [];
  const flags = env.BENCH_NODE_FLAGS ?? process.env.BENCH_NODE_FLAGS;
  const nodeArgs = [
    ...(mode !== 'hosted'
      ? []
      : flags === undefined
        ? imageFlags('ingestion')
        : flags.split(' ').filter(Boolean)),
    ...(mode === 'control-plane' ? [] : profile),
  ];
  // The hosted service's flags go to its own process (collect-server.js starts it); the
  // baseline and the floor are that process.
  const child = track(
    spawn(process.execPath, [...(mode === 'hosted' ? [] : nodeArgs), collectServer, mode], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env, BENCH_SERVICE_NODE_ARGS: JSON.stringify(nodeArgs) },
    }),
  );
  const lines = readline.createInterface({ input: child.stdout });
  const cpuReplies = [];
  let ready = false;
  const cpuMicros = () =>
    new Promise((resolve) => {
      cpuReplies.push(resolve);
      child.kill('SIGUSR2');
    });
  return new Promise((resolve, reject) => {
    lines.on('line', (line) => {
      const message = JSON.parse(line);
      if ('cpuMicros' in message) cpuReplies.shift()?.(message);
      else if (!ready) {
        ready = true;
        resolve({ child, cpuMicros, ...message });
      } else onLine(message);
    });
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}

/**
 * The built control plane on a scratch database with one account and write key, in a process
 * of its own. Its ready line, passed to hosted servers as BENCH_CONTROL_PLANE, lets several of
 * them resolve the same write key at it.
 */
function startControlPlane() {
  return startCollectServer('control-plane');
}

/**
 * A built `delivery --destination <destination>` process on the outbox of KAFKA_TOPIC_PREFIX
 * (env), with the flags of delivery's image, or BENCH_NODE_FLAGS ('' for none) to compare a heap
 * setting, then nodeArgs; its logs at error level, its health port any.
 */
function startDelivery(destination, env, nodeArgs = []) {
  const flags = env.BENCH_NODE_FLAGS ?? process.env.BENCH_NODE_FLAGS;
  return track(
    spawn(
      process.execPath,
      [
        ...(flags === undefined ? imageFlags('delivery') : flags.split(' ').filter(Boolean)),
        ...nodeArgs,
        path.join(root, 'apps/delivery/dist/main.js'),
        '--destination',
        destination,
      ],
      {
        env: { ...process.env, DELIVERY_HTTP_PORT: '0', LOG_LEVEL: 'error', ...env },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    ),
  );
}

/** Peak resident set of a live process (kB), as the kernel counts it; null when unreadable. */
function peakRssKb(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/^VmHWM:\s+(\d+) kB/m.exec(status)?.[1]);
    return Number.isFinite(kb) ? kb : null;
  } catch {
    return null;
  }
}

// utime and stime of proc(5) count clock ticks: 100 per second on Linux.
const TICKS_PER_SECOND = 100;

/** CPU seconds (user + system) a live process has used so far; 0 once it is gone. */
function cpuSeconds(pid) {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime, fields 14 and 15 of proc(5).
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Busy and total CPU seconds of the whole machine so far (all cores, /proc/stat). */
function machineCpuSeconds() {
  const [, ...ticks] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
  const values = ticks.map(Number);
  const total = values.slice(0, 8).reduce((a, b) => a + b, 0);
  // idle and iowait.
  const idle = values[3] + values[4];
  return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND };
}

function processes() {
  return fs
    .readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((pid) => {
      try {
        return { pid: Number(pid), argv: fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0') };
      } catch {
        return undefined;
      }
    })
    .filter(Boolean);
}

/**
 * The pid of the Kafka broker on this machine that listens on `port`, when it runs here as
 * tools/kafka/kafka.sh starts it (a JVM running kafka.Kafka <server.properties>); else null.
 */
function kafkaBrokerPid(port) {
  const brokers = processes().filter(({ argv }) => argv.includes('kafka.Kafka'));
  const listensOn = ({ argv }) => {
    try {
      const properties = fs.readFileSync(argv[argv.indexOf('kafka.Kafka') + 1], 'utf8');
      return new RegExp(`^listeners=.*:${port}\\b`, 'm').test(properties);
    } catch {
      return false;
    }
  };
  return (brokers.find(listensOn) ?? (brokers.length === 1 ? brokers[0] : undefined))?.pid ?? null;
}

/** The pids of the processes on this machine whose name (comm) is `name`: postgres, redis-server. */
function pidsNamed(name) {
  return fs
    .readdirSync('/proc')
    .filter((pid) => /^\d+$/.test(pid))
    .filter((pid) => {
      try {
        return fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name;
      } catch {
        return false;
      }
    })
    .map(Number);
}

module.exports = {
  root,
  imageFlags,
  startCollectServer,
  startControlPlane,
  startDelivery,
  stopProcess,
  stopAll,
  onInterrupt,
  exited,
  peakRssKb,
  cpuSeconds,
  machineCpuSeconds,
  kafkaBrokerPid,
  pidsNamed,
};
