import type { ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import request from 'supertest';
import { hostileBodies } from '@pipeline/events/testing';
import { AccountService } from '../accounts/account.service';
import { ApiKeyService } from '../auth/api-key.service';
import { scopes } from '../auth/scopes';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import { DEBUG_STREAM_PATH } from '../debugger/debugger-stream';
import { MCP_PATH } from '../tasks/mcp-server';
import {
  killAll,
  requireBuiltControlPlane,
  startControlPlaneProcess,
} from '../testing/control-plane-process';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';

// On the control plane: the bodies that took ingestion down (hostileBodies())
// sent to every route the process serves, with no key, a wrong key and a valid one. The built
// process runs with a stated heap; a route whose work grew past a small multiple of the body
// would abort it. Every answer is below 500 and a good request is answered right after.

const HEAP_LIMIT_MB = 256;

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

/** Every route tsoa generated (the API, /health and the internal ones), read from its output. */
function generatedRoutes(): [Method, string][] {
  const source = readFileSync(path.join(__dirname, '../generated/routes.ts'), 'utf8');
  const routes = [...source.matchAll(/app\.(get|post|put|patch|delete)\('([^']+)'/g)].map(
    ([, method, route]) => [method as Method, route as string] as [Method, string],
  );
  return [...new Map(routes.map((r) => [r.join(' '), r])).values()];
}

describe(`hostile bodies at every route of the built control plane (${HEAP_LIMIT_MB} MB heap)`, () => {
  let db: MigratedScratchDatabase;
  let warehouse: ScratchWarehouse;
  let key: string;
  const processes: ChildProcess[] = [];

  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('hostile bodies');
    warehouse = await startScratchWarehouse('hostile bodies warehouse');
    const account = await new AccountService(db.dataSource).create('Hostile bodies', []);
    key = (await new ApiKeyService(db.dataSource).issue(account.id, 'test', [...scopes])).apiKey;
  });
  afterAll(async () => {
    killAll(processes);
    await warehouse?.drop();
    await db?.drop();
  });

  it('answers each body below 500 at every route and still serves a good request', async () => {
    const cp = await startControlPlaneProcess(
      (port) => ({
        ...process.env,
        NODE_OPTIONS: `--max-old-space-size=${HEAP_LIMIT_MB}`,
        DATABASE_URL: db.url,
        WAREHOUSE_URL: warehouse.url,
        CREDENTIALS_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString('base64')}`,
        INTERNAL_TOKEN_INGESTION: randomBytes(24).toString('hex'),
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'error',
        TASK_WORKER_ENABLED: 'false',
        SCHEDULER_ENABLED: 'false',
        DEAD_LETTER_INDEX_ENABLED: 'false',
        API_RATE_LIMIT_ENABLED: 'false',
        // Its hundreds of wrong keys are counted under an address of its own (below), never
        // 127.0.0.1's, which every other suite's control plane shares in this Redis.
        TRUSTED_PROXIES: 'loopback',
        API_KEY_FAILURES_PER_MINUTE: '1000000',
        REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
      }),
      processes,
    );
    let exitCode: number | null | undefined;
    cp.child.once('exit', (code) => (exitCode = code));
    const client = `2001:db8:${randomBytes(2).toString('hex')}:${randomBytes(2).toString('hex')}::1`;
    const auth = (call: request.Test) =>
      call.set('Authorization', `Bearer ${key}`).set('X-Forwarded-For', client);
    // Real ids where a route takes one of the account's resources, so a write reaches its
    // validation and service instead of stopping at 404.
    const app = await auth(request(cp.base).post('/api/v1/apps')).send({
      appType: 'web_tracking',
      displayName: 'Site',
    });
    expect(app.status).toBe(201);
    const writeKey = await auth(request(cp.base).post('/api/v1/write-keys')).send({ name: 'site' });
    expect(writeKey.status).toBe(201);
    const ids: Record<string, string> = {
      appId: app.body.data.id as string,
      writeKeyId: writeKey.body.data.id as string,
    };
    const routes: [Method, string][] = [
      ...generatedRoutes(),
      ['post', MCP_PATH],
      ['get', DEBUG_STREAM_PATH],
      ['get', '/livez'],
      ['get', '/readyz'],
      ['get', '/metrics'],
      ['get', '/api/v1/openapi.json'],
      ['get', '/docs/'],
      ['get', '/console'],
      ['post', '/api/v1/not-a-route'],
      // Deletes last: the routes before them use the resources.
    ].sort(([a], [b]) => Number(a === 'delete') - Number(b === 'delete'));
    const bodies = hostileBodies();
    const failures: string[] = [];
    let sent = 0;
    for (const [method, template] of routes) {
      // The debugger's stream is an open SSE answer: a stream of another key's id is refused.
      const route = template.replace(/:([A-Za-z]+)/g, (_, name: string) =>
        template === DEBUG_STREAM_PATH ? randomUUID() : (ids[name] ?? randomUUID()),
      );
      for (const hostile of bodies) {
        for (const presented of [null, `pk_${randomBytes(16).toString('hex')}`, key]) {
          // A bound, not a claim: an answer that never comes (an open stream) fails the route.
          const call = request(cp.base)
            [method](route)
            .timeout(20_000)
            .set('Content-Type', 'application/json')
            .set('X-Forwarded-For', client);
          if (presented) call.set('Authorization', `Bearer ${presented}`);
          const response = await call.send(hostile.json).catch((error: Error) => ({ status: error.message }));
          sent += 1;
          // A delete reads no body: it deletes (200) or finds nothing (404).
          const write = method !== 'get' && method !== 'delete';
          const ok =
            typeof response.status === 'number' &&
            response.status < 500 &&
            (!write || response.status >= 400);
          if (!ok)
            failures.push(
              `${method} ${template} ${hostile.name} key=${Boolean(presented)}: ${response.status}`,
            );
          if (exitCode !== undefined)
            throw new Error(`control plane exited (${exitCode}): ${cp.stderr().slice(-2000)}`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(sent).toBeGreaterThan(bodies.length * 3 * 40);
    // The deletes at the end removed the app: a new one is made and listed.
    const after = await auth(request(cp.base).post('/api/v1/apps')).send({
      appType: 'web_tracking',
      displayName: 'After',
    });
    expect(after.status).toBe(201);
    const listed = await auth(request(cp.base).get('/api/v1/apps'));
    expect([listed.status, listed.body.data.map((a: { displayName: string }) => a.displayName)]).toEqual([
      200,
      ['After'],
    ]);
    expect(exitCode).toBeUndefined();
    // About 900 requests of up to 478 KB each: a bound for a loaded machine, not a claim.
  }, 300_000);
});
