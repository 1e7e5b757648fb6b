// Load benchmark of POST /collect (issue 4): hosted mode vs a bare node:http baseline, batches
// of 20 events with unique messageIds, over loopback, each server in its own process; and
// Segment's POST /v1/batch (issue 18) with the same body, Basic auth, on the same server.
//   node tools/bench/collect-load.js [seconds=10] [connections=32]
// Prints events/s, p50 and p99 for each, the ratios, and p99 of hosted mode at 80% of its peak.
const { spawn } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const path = require('node:path');
const readline = require('node:readline');
const autocannon = require('autocannon');

const seconds = Number(process.argv[2] ?? 10);
const connections = Number(process.argv[3] ?? 32);
const EVENTS = 20;

function startServer(mode) {
  const child = spawn(process.execPath, [path.join(__dirname, 'collect-server.js'), mode], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout });
  const cpuReplies = [];
  lines.on('line', (line) => {
    const message = JSON.parse(line);
    if ('cpuMicros' in message) cpuReplies.shift()?.(message.cpuMicros);
  });
  const cpuMicros = () =>
    new Promise((resolve) => {
      cpuReplies.push(resolve);
      child.kill('SIGUSR2');
    });
  return new Promise((resolve, reject) => {
    lines.once('line', (line) => resolve({ child, cpuMicros, ...JSON.parse(line) }));
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}

function body() {
  const now = new Date().toISOString();
  const batch = Array.from({ length: EVENTS }, (_, i) => ({
    type: 'track',
    event: 'Product Viewed',
    messageId: randomUUID(),
    anonymousId: `anon-${i}`,
    timestamp: now,
    properties: { sku: 'SKU-1', price: 12.5, currency: 'EUR' },
    context: {
      library: { name: 'bench', version: '1' },
      page: { url: 'https://shop.example/p', path: '/p' },
    },
  }));
  return JSON.stringify({ sentAt: now, batch });
}

async function run(server, overallRate, route = 'collect') {
  const cpuBefore = await server.cpuMicros();
  const result = await load(server, overallRate, route);
  result.cpuMicrosPerRequest = ((await server.cpuMicros()) - cpuBefore) / Math.max(1, result['2xx']);
  return result;
}

/** The same body on both routes; each with its own way of presenting the write key. */
const routes = {
  collect: (server) => ({ path: '/collect', auth: { 'x-write-key': server.writeKey } }),
  segment: (server) => ({
    path: '/v1/batch',
    auth: { authorization: `Basic ${Buffer.from(`${server.writeKey}:`).toString('base64')}` },
  }),
};

function load(server, overallRate, route) {
  const { path: urlPath, auth } = routes[route](server);
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: `http://127.0.0.1:${server.port}${urlPath}`,
        method: 'POST',
        connections,
        duration: seconds,
        ...(overallRate ? { overallRate } : {}),
        headers: { 'content-type': 'application/json', ...auth },
        requests: [{ setupRequest: (req) => ({ ...req, body: body() }) }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

const describe = (name, r) => {
  const ok = r['2xx'];
  const eps = (ok * EVENTS) / r.duration;
  console.log(
    `${name.padEnd(30)} ${String(Math.round(eps)).padStart(7)} events/s  ${String(Math.round(ok / r.duration)).padStart(5)} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  server CPU ${Math.round(r.cpuMicrosPerRequest)} µs/req  non-2xx ${r.non2xx} errors ${r.errors}`,
  );
  return eps;
};

async function main() {
  console.log(
    `POST /collect, batches of ${EVENTS} events, ${connections} connections, ${seconds}s per run, node ${process.version}`,
  );
  const base = await startServer('baseline');
  const baselineEps = describe('baseline (node:http + JSON)', await run(base));
  base.child.kill('SIGTERM');

  const hosted = await startServer('hosted');
  await run({ ...hosted }, undefined).then(() => undefined); // warm-up: JIT, connections, caches
  const peak = await run(hosted);
  const hostedEps = describe('hosted /collect (acks=-1)', peak);
  const rate = Math.max(1, Math.round((0.8 * peak['2xx']) / peak.duration));
  describe(`hosted at 80% of peak (${rate} req/s)`, await run(hosted, rate));
  const segmentEps = describe('hosted /v1/batch (Segment API)', await run(hosted, undefined, 'segment'));
  // /collect again after /v1/batch: the two are compared on an equally warm server.
  const againEps = describe('hosted /collect, again', await run(hosted));
  hosted.child.kill('SIGTERM');
  await new Promise((resolve) => hosted.child.once('exit', resolve));
  console.log(`ratio hosted/baseline: ${(hostedEps / baselineEps).toFixed(2)} (target >= 0.5)`);
  const collectEps = (hostedEps + againEps) / 2;
  console.log(
    `ratio /v1/batch to /collect (mean of the two /collect runs): ${(segmentEps / collectEps).toFixed(2)} (target within 0.90-1.10)`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
