// What the hostile bodies (libs/events/src/testing/hostile-bodies.ts: a 20,000-key batch
// context over 93,000 empty messages, deep nesting, a 400 KB string, 10,000 keys...) cost the
// built ingestion service: the time from the body's last byte to the answer, per route, body
// and key (none, unknown, valid), and the process's heap. Runs ingestion in static mode with a
// stated heap (--max-old-space-size): a body that needs more aborts it, and the script says so.
// Build first (pnpm nx run-many -t build); PostgreSQL at DATABASE_URL.
//   node tools/bench/hostile-bodies.js [rounds=5] [heapMb=128]
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');

const root = path.join(__dirname, '../..');
const { hostileBodies } = require(path.join(root, 'libs/events/dist/testing/index.js'));

const rounds = Number(process.argv[2] ?? 5);
const heapMb = Number(process.argv[3] ?? 128);
const port = 21000 + Math.floor(Math.random() * 5000);
const metricsPort = port + 1;
const writeKey = 'bench-hostile-write-key';
const database = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/pipeline');
database.pathname = '/bench_hostile_bodies';

function call(method, url, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { 'content-type': 'application/json', ...headers } });
    let sentAt = 0;
    req.once('finish', () => (sentAt = performance.now()));
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.once('end', () =>
        resolve({
          status: res.statusCode,
          ms: performance.now() - sentAt,
          text: Buffer.concat(chunks).toString(),
        }),
      );
    });
    req.end(body);
  });
}

async function heapUsed() {
  const { text } = await call('GET', `http://127.0.0.1:${metricsPort}/metrics`);
  const line = text.split('\n').find((l) => l.startsWith('nodejs_heap_size_used_bytes '));
  return line ? Number(line.split(' ')[1]) : NaN;
}

const peakRss = (pid) =>
  Number(/VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) * 1024;

const mb = (bytes) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;

async function main() {
  const child = spawn(
    process.execPath,
    [`--max-old-space-size=${heapMb}`, path.join(root, 'apps/ingestion/dist/main.js')],
    {
      env: {
        ...process.env,
        MANAGED_AUTH_ENABLED: 'false',
        WRITE_KEY: writeKey,
        WAREHOUSE_URL: database.toString(),
        HOST: '127.0.0.1',
        PORT: String(port),
        METRICS_PORT: String(metricsPort),
        LOG_LEVEL: 'error',
        REDIS_URL: '',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  let exited;
  child.once('exit', (code, signal) => (exited = signal ?? code));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (exited !== undefined) throw new Error(`ingestion exited (${exited}) before it answered`);
    if ((await call('GET', `${base}/livez`).catch(() => null))?.status === 200) break;
    if (i > 600) throw new Error('ingestion did not start within 60 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  const idleHeap = await heapUsed();
  let peakHeap = idleHeap;
  console.log(`ingestion (static mode), --max-old-space-size=${heapMb}; idle heap ${mb(idleHeap)}`);
  console.log(`${'route'.padEnd(10)} ${'body'.padEnd(44)} ${'key'.padEnd(8)} status  median    max`);
  const keys = {
    none: {},
    unknown: { 'x-write-key': 'bench-unknown-key' },
    valid: { 'x-write-key': writeKey },
  };
  let slowest = 0;
  for (const route of ['/collect', '/v1/batch', '/v1/track']) {
    for (const body of hostileBodies()) {
      for (const [keyName, headers] of Object.entries(keys)) {
        const times = [];
        let status;
        for (let r = 0; r < rounds; r++) {
          const answer = await call('POST', `${base}${route}`, body.json, headers);
          if (exited !== undefined) throw new Error(`ingestion died (${exited}) on ${route} ${body.name}`);
          times.push(answer.ms);
          status = answer.status;
          peakHeap = Math.max(peakHeap, await heapUsed());
        }
        times.sort((a, b) => a - b);
        slowest = Math.max(slowest, times[times.length - 1]);
        console.log(
          `${route.padEnd(10)} ${`${body.name} (${(body.json.length / 1024).toFixed(0)} KB)`.padEnd(44)} ${keyName.padEnd(8)} ${String(status).padEnd(7)} ${times[Math.floor(times.length / 2)].toFixed(1).padStart(6)} ms ${times[times.length - 1].toFixed(1).padStart(6)} ms`,
        );
      }
    }
  }
  const good = await call(
    'POST',
    `${base}/v1/track`,
    JSON.stringify({ userId: 'bench', event: 'After' }),
    keys.valid,
  );
  console.log(`a good event after them: ${good.status} ${good.text}`);
  console.log(
    `slowest answer ${slowest.toFixed(1)} ms; heap used: idle ${mb(idleHeap)}, highest seen ${mb(peakHeap)}; peak RSS ${mb(peakRss(child.pid))}`,
  );
  child.kill('SIGTERM');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
