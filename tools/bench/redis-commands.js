// Redis commands per POST /collect: the hosted server of collect-server.js (its limits, batch
// dedupe and debugger recorder as in production) takes N requests one after another, and the
// store's INFO commandstats before and after, on every primary, give the commands each request
// cost. MONITOR on each primary splits them into what the client sent and what the limits'
// script ran inside Redis.
//   pnpm bench:redis-commands [requests=200] [events per request=20] [concurrency=1]
//   REDIS_CLUSTER_NODES=127.0.0.1:7101,... node tools/bench/redis-commands.js   (a Redis Cluster)
// Without REDIS_CLUSTER_NODES it starts a redis-server of its own on a free port (nothing else
// may count on it) and stops it at the end. DEBUGGER_ENABLED=false leaves the recorder out.
// One request at a time shows a request's own commands; with concurrency above 1, requests of
// the same REDIS_BATCH_WINDOW_MS share a script call (SharedStoreBatch), and the count per
// request falls.
// Needs the build (pnpm nx run-many -t build), Kafka (KAFKA_BROKERS) and PostgreSQL (DATABASE_URL).
const { spawn, spawnSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const root = path.join(__dirname, '../..');
const { Redis } = require(require.resolve('ioredis', { paths: [path.join(root, 'libs/redis')] }));

const requests = Number(process.argv[2] ?? 200);
const eventsPerRequest = Number(process.argv[3] ?? 20);
const concurrency = Number(process.argv[4] ?? 1);
const clusterSeeds = process.env.REDIS_CLUSTER_NODES;

const freePort = () =>
  new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });

/** A redis-server for this run alone: its counts are this run's. */
async function ownRedis() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-commands-'));
  const port = await freePort();
  const started = spawnSync('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'yes',
    '--pidfile',
    path.join(dir, 'redis.pid'),
    '--dir',
    dir,
  ]);
  if (started.status !== 0) throw new Error(`redis-server did not start: ${started.stderr}`);
  for (let attempt = 0; ; attempt += 1) {
    const ping = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], {
      encoding: 'utf8',
    });
    if (ping.stdout.trim() === 'PONG') break;
    if (attempt > 50) throw new Error(`redis-server on ${port} does not answer: ${ping.stderr}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return {
    env: { REDIS_URL: `redis://127.0.0.1:${port}` },
    nodes: [{ host: '127.0.0.1', port }],
    stop: () => {
      try {
        process.kill(Number(fs.readFileSync(path.join(dir, 'redis.pid'), 'utf8')), 'SIGTERM');
      } catch {
        // Already gone: nothing to stop.
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The primaries of the cluster the seeds belong to (CLUSTER NODES of the first seed). */
async function clusterPrimaries(seeds) {
  const [host, port] = seeds.split(',')[0].trim().split(':');
  const client = new Redis({ host, port: Number(port) });
  const text = await client.cluster('NODES');
  client.disconnect();
  return text
    .split('\n')
    .filter((line) => line.includes('master') && !line.includes('fail'))
    .map((line) => {
      const [address] = line.split(' ')[1].split('@');
      const at = address.lastIndexOf(':');
      return { host: address.slice(0, at), port: Number(address.slice(at + 1)) };
    });
}

/** calls per command (lower case, subcommands as `cluster|slots`), summed over the nodes. */
async function commandCalls(clients) {
  const total = {};
  for (const client of clients) {
    for (const line of (await client.info('commandstats')).split('\n')) {
      const match = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
      if (match) total[match[1]] = (total[match[1]] ?? 0) + Number(match[2]);
    }
  }
  return total;
}

function startServer(env) {
  const child = spawn(process.execPath, [path.join(__dirname, 'collect-server.js'), 'hosted'], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    readline
      .createInterface({ input: child.stdout })
      .once('line', (line) => resolve({ child, ...JSON.parse(line) }));
    child.once('exit', (code) => reject(new Error(`the hosted server exited with ${code}`)));
  });
}

const body = () =>
  JSON.stringify({
    batch: Array.from({ length: eventsPerRequest }, () => ({
      type: 'track',
      event: 'Counted',
      messageId: randomUUID(),
      timestamp: new Date().toISOString(),
      anonymousId: 'anon-1',
    })),
  });

async function main() {
  const own = clusterSeeds ? undefined : await ownRedis();
  const nodes = own ? own.nodes : await clusterPrimaries(clusterSeeds);
  const server = await startServer(own ? own.env : { REDIS_CLUSTER_NODES: clusterSeeds });
  const stats = nodes.map((node) => new Redis(node));
  const monitors = [];
  const bases = [];
  const seen = { client: {}, script: {} };
  try {
    const send = async () => {
      const response = await fetch(`http://127.0.0.1:${server.port}/collect`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-write-key': server.writeKey },
        body: body(),
      });
      if (response.status !== 202)
        throw new Error(`/collect answered ${response.status}: ${await response.text()}`);
      await response.text();
    };
    // The write key cached and the script loaded (EVAL once, EVALSHA after): the steady state.
    for (let i = 0; i < 3; i += 1) await send();
    for (const node of nodes) {
      const base = new Redis(node);
      bases.push(base);
      const monitor = await base.monitor();
      monitor.on('monitor', (_time, args, source) => {
        const name = String(args[0]).toLowerCase();
        const side = source === 'lua' ? seen.script : seen.client;
        side[name] = (side[name] ?? 0) + 1;
      });
      monitors.push(monitor);
    }
    const before = await commandCalls(stats);
    const started = Date.now();
    let left = requests;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left > 0) {
          left -= 1;
          await send();
        }
      }),
    );
    const seconds = (Date.now() - started) / 1000;
    // The debugger's writes leave after the answer: wait (bounded) until the counts stand still.
    let after = await commandCalls(stats);
    for (let i = 0; i < 50; i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const again = await commandCalls(stats);
      if (JSON.stringify(again.xadd) === JSON.stringify(after.xadd) && again.set === after.set) break;
      after = again;
    }
    const rows = Object.keys(after)
      .filter((name) => name !== 'info' && name !== 'monitor')
      .map((name) => ({ name, calls: after[name] - (before[name] ?? 0) }))
      .filter((row) => row.calls > 0)
      .sort((a, b) => b.calls - a.calls);
    const mode = clusterSeeds ? `Redis Cluster of ${nodes.length} primaries` : 'one Redis server';
    console.log(
      `${mode}: ${requests} requests of ${eventsPerRequest} events in ${seconds.toFixed(1)} s (${(requests / seconds).toFixed(0)} requests/s, ${concurrency} at a time), debugger ${server.debugger ? 'on' : 'off'}`,
    );
    console.log('command            calls   per request   sent by the client   run by the script');
    let total = 0;
    let sent = 0;
    for (const { name, calls } of rows) {
      total += calls;
      sent += seen.client[name] ?? 0;
      console.log(
        `${name.padEnd(18)} ${String(calls).padStart(5)}   ${(calls / requests).toFixed(3).padStart(11)}   ${String(seen.client[name] ?? 0).padStart(18)}   ${String(seen.script[name] ?? 0).padStart(17)}`,
      );
    }
    console.log(
      `all                ${String(total).padStart(5)}   ${(total / requests).toFixed(3).padStart(11)}   client round-trip commands per request: ${(sent / requests).toFixed(3)}`,
    );
  } finally {
    for (const client of [...monitors, ...bases]) client.disconnect();
    for (const client of stats) client.disconnect();
    server.child.kill('SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));
    own?.stop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
