// Benchmark of the management API: the built control plane (apps/control-plane/dist) on a
// scratch database of the real PostgreSQL server, driven over loopback HTTP.
// Prints latency percentiles and throughput per operation. Run after a build:
//   node tools/bench/control-plane-api.js [requestsPerOperation=1000] [concurrency=8]
const http = require('node:http');
const { randomBytes } = require('node:crypto');
const { PassThrough } = require('node:stream');
const path = require('node:path');

const dist = (p) => path.join(__dirname, '../../apps/control-plane/dist', p);
const { createApp } = require(dist('app'));
const { createDataSource } = require(dist('data-model'));
const { migrate } = require(dist('database/data-source'));
const { AccountService } = require(dist('accounts/account.service'));
const { ApiKeyService } = require(dist('auth/api-key.service'));
const { scopes } = require(dist('auth/scopes'));
// Workspace packages resolve from the control plane's own node_modules (pnpm links them there).
const fromControlPlane = (name) => require(require.resolve(name, { paths: [dist('.')] }));
const { createScratchDatabase, DEFAULT_DATABASE_URL } = fromControlPlane('@pipeline/postgres');
const { createLogger } = fromControlPlane('@pipeline/logger');

const total = Number(process.argv[2] ?? 1000);
const concurrency = Number(process.argv[3] ?? 8);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });

function call(port, method, url, key, body) {
  return new Promise((resolve, reject) => {
    const data = body ? JSON.stringify(body) : undefined;
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: url,
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          ...(data ? { 'content-length': Buffer.byteLength(data) } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode, body: text }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

async function measure(name, expected, makeRequest) {
  const latencies = [];
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        const i = next++;
        const t0 = process.hrtime.bigint();
        const { status, body } = await makeRequest(i);
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        if (status !== expected) throw new Error(`${name}: ${status} ${body.slice(0, 200)}`);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const pct = (p) =>
    latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(2);
  console.log(
    `${name.padEnd(34)} ${String(total).padStart(5)} req  ${(total / seconds).toFixed(0).padStart(5)} req/s  p50 ${pct(50)} ms  p95 ${pct(95)} ms  p99 ${pct(99)} ms`,
  );
}

async function main() {
  const scratch = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'bench');
  const dataSource = createDataSource({ url: scratch.url, poolMax: 10 });
  await dataSource.initialize();
  try {
    await migrate(dataSource);
    const logger = createLogger({ service: 'bench', stream: new PassThrough(), level: 'error' });
    const app = createApp({
      dataSource,
      logger,
      credentialKeys: `b1:${randomBytes(32).toString('base64')}`,
      internalServiceToken: randomBytes(32).toString('hex'),
    });
    const server = http.createServer(app);
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address();
    const account = await new AccountService(dataSource).create('Bench');
    const { apiKey } = await new ApiKeyService(dataSource).issue(account.id, 'bench', [...scopes]);
    console.log(
      `control plane API benchmark: ${total} requests per operation, concurrency ${concurrency}, node ${process.version}`,
    );

    const appIds = [];
    await measure('POST /apps (encrypts credentials)', 201, async (i) => {
      const r = await call(port, 'POST', '/api/v1/apps', apiKey, {
        appType: 'stripe',
        displayName: `app ${i}`,
        credentials: { apiKey: `sk_${i}` },
      });
      appIds.push(JSON.parse(r.body).data.id);
      return r;
    });
    await measure('GET /apps?limit=100 (of 1000+)', 200, () =>
      call(port, 'GET', '/api/v1/apps?limit=100', apiKey),
    );
    await measure('GET /apps/{id} (decrypts, masks)', 200, (i) =>
      call(port, 'GET', `/api/v1/apps/${appIds[i % appIds.length]}`, apiKey),
    );
    const sourceIds = [];
    await measure('POST /sources', 201, async (i) => {
      const r = await call(port, 'POST', '/api/v1/sources', apiKey, {
        appId: appIds[i % appIds.length],
        syncType: 'stripe',
      });
      sourceIds.push(JSON.parse(r.body).data.id);
      return r;
    });
    await measure('GET /sources?sort=last_sync_at', 200, () =>
      call(port, 'GET', '/api/v1/sources?limit=100&sort=last_sync_at', apiKey),
    );
    await measure('POST /sources/{id}/sync', 202, (i) =>
      call(port, 'POST', `/api/v1/sources/${sourceIds[i]}/sync`, apiKey),
    );
    await measure('unauthenticated (401)', 401, () => call(port, 'GET', '/api/v1/apps', 'plk_wrong'));
    const rss = process.memoryUsage().rss / 1024 / 1024;
    console.log(`process RSS after the run: ${rss.toFixed(0)} MiB`);
    agent.destroy();
    server.close();
  } finally {
    await dataSource.destroy();
    await scratch.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
