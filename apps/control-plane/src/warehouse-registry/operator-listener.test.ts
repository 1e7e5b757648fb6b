import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { defaultWarehouseTimeouts, WarehouseEngines } from '@pipeline/destinations';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import {
  exited,
  killAll,
  requireBuiltControlPlane,
  startControlPlaneProcess,
} from '../testing/control-plane-process';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness } from '../testing/harness';
import { waitUntil } from '../testing/wait';

// Security review 2026-11-29, finding 3: the operator API was routed by the public Ingress,
// exempt from every limiter, and a PATCH of the host sent the stored password to the new one.
const OPERATOR_TOKEN = 'operator-token-for-listener-0123456789abcdef';
const ADDRESS_HEADER = 'x-test-client-address';

const operatorRoutes: [method: 'get' | 'post' | 'patch', path: string][] = [
  ['get', '/api/v1/operator/warehouses'],
  ['get', '/API/V1/Operator/warehouses'],
  ['get', '/api/v1/operator/warehouses/default'],
  ['patch', '/api/v1/operator/warehouses/default'],
  ['post', '/api/v1/operator/warehouses/default/check'],
  ['get', '/api/v1/operator/warehouse-moves'],
  ['get', '/api/v1/operator/warehouses/'],
];

describe('the operator API on a listener of its own (real PostgreSQL)', () => {
  let h: Harness;
  let engines: WarehouseEngines;
  beforeAll(async () => {
    engines = WarehouseEngines.open(
      { processMaxConnections: 4, idleMs: 5000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    const addressOf = (req: { headers: Record<string, string | string[] | undefined> }) =>
      String(req.headers[ADDRESS_HEADER] ?? '192.0.2.7');
    h = await startHarness('operator listener', {
      operatorToken: OPERATOR_TOKEN,
      engineFor: (connection) => engines.for(connection),
      apiKeyFailures: { perMinute: 2, redis: null, clientAddress: addressOf },
      operatorTokenFailures: { perMinute: 3, redis: null, clientAddress: addressOf },
    });
  });
  afterAll(async () => {
    await h.close();
    await engines.close();
  });

  const operator = (method: 'get' | 'post' | 'patch', path: string, address = '192.0.2.50') =>
    request(h.operatorApp)
      [method](path)
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .set(ADDRESS_HEADER, address);

  it('answers 404 on the public listener for every operator route, and serves them on its own', async () => {
    for (const [method, path] of operatorRoutes) {
      const publicAnswer = await request(h.app)
        [method](path)
        .set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
      expect({ path, status: publicAnswer.status, code: publicAnswer.body.code }).toEqual({
        path,
        status: 404,
        code: 'not_found',
      });
    }
    const listed = await operator('get', '/API/V1/Operator/warehouses');
    expect([listed.status, listed.body.data.map((w: { name: string }) => w.name)]).toEqual([
      200,
      ['default'],
    ]);
    expect((await operator('get', '/api/v1/operator/warehouse-moves')).status).toBe(200);

    // The operator listener serves nothing else: no management API, no internal endpoints.
    const tenant = await h.tenant();
    expect((await h.as(tenant.key).get('/api/v1/apps')).status).toBe(200);
    for (const path of ['/api/v1/apps', '/internal/v1/warehouses/resolve', '/health', '/metrics', '/docs']) {
      const answer = await request(h.operatorApp).get(path).set('Authorization', `Bearer ${tenant.key}`);
      expect({ path, status: answer.status, code: answer.body.code }).toEqual({
        path,
        status: 404,
        code: 'not_found',
      });
    }
  });

  it('refuses a new host, port or TLS mode without the password, and never connects there', async () => {
    const connections: string[] = [];
    const listener: Server = createServer((socket) => {
      connections.push(`${socket.remoteAddress}:${socket.remotePort}`);
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as AddressInfo).port;
    try {
      const before = (await operator('get', '/api/v1/operator/warehouses/default')).body.data;
      const otherTls = before.tlsMode === 'disable' ? 'require' : 'disable';
      for (const [changes, fields] of [
        [{ port }, ['body.port']],
        [{ host: 'localhost', port }, ['body.host', 'body.port']],
        [{ tlsMode: otherTls }, ['body.tlsMode']],
        [
          { host: 'localhost', port, tlsMode: otherTls, maxConnections: 3 },
          ['body.host', 'body.port', 'body.tlsMode'],
        ],
      ] as [Record<string, unknown>, string[]][]) {
        const refused = await operator('patch', '/api/v1/operator/warehouses/default').send(changes);
        expect({
          changes,
          status: refused.status,
          code: refused.body.code,
          paths: (refused.body.errors as { path: string }[]).map((e) => e.path),
        }).toEqual({ changes, status: 422, code: 'secret_required_for_new_host', paths: fields });
      }
      // Nothing changed: the check reaches the server the password was entered for, and the
      // listener named in the refused changes was never connected to.
      const kept = (await operator('get', '/api/v1/operator/warehouses/default')).body.data;
      expect(kept).toMatchObject({
        host: before.host,
        port: before.port,
        tlsMode: before.tlsMode,
        maxConnections: before.maxConnections,
      });
      const checked = await operator('post', '/api/v1/operator/warehouses/default/check');
      expect([checked.status, checked.body.data.status]).toEqual([200, 'active']);
      expect(connections).toEqual([]);

      // The same host, port and mode written again move nothing: no password needed.
      const same = await operator('patch', '/api/v1/operator/warehouses/default').send({
        host: before.host,
        port: before.port,
        tlsMode: before.tlsMode,
        maxConnections: 7,
      });
      expect([same.status, same.body.data.maxConnections]).toEqual([200, 7]);

      // With the password entered again the move is made, and the next check goes there: the
      // listener does record a connection when one is made.
      const moved = await operator('patch', '/api/v1/operator/warehouses/default').send({
        port,
        tlsMode: 'disable',
        password: 'entered-again-Pw-4c1d',
      });
      expect([moved.status, moved.body.data.port, moved.body.data.password]).toEqual([
        200,
        port,
        '**********',
      ]);
      const entity = await h.services.warehouses.find('default');
      expect(h.services.warehouses.connectionOf(entity).password).toBe('entered-again-Pw-4c1d');
      const probed = await operator('post', '/api/v1/operator/warehouses/default/check');
      expect([probed.status, probed.body.data.status]).toEqual([200, 'unavailable']);
      await waitUntil('the check connected to the new port', async () => connections.length >= 1, 5000);
    } finally {
      await new Promise<void>((resolve) => listener.close(() => resolve()));
    }
  });

  it('limits wrong operator tokens per address with 429, and logs each without the token', async () => {
    const address = '198.51.100.23';
    const wrong = [1, 2, 3].map(() => `wrong-${randomBytes(16).toString('hex')}`);
    const withToken = (token: string, from = address) =>
      request(h.operatorApp)
        .get('/api/v1/operator/warehouses')
        .set('Authorization', `Bearer ${token}`)
        .set(ADDRESS_HEADER, from);
    for (const token of wrong) {
      const refused = await withToken(token);
      expect([refused.status, refused.body.code]).toEqual([401, 'invalid_operator_token']);
    }
    // The limit reached: the right token is refused too, so no guess is ever confirmed.
    for (const token of [`wrong-${randomBytes(16).toString('hex')}`, OPERATOR_TOKEN]) {
      const limited = await withToken(token);
      expect([limited.status, limited.body.code]).toEqual([429, 'too_many_failed_attempts']);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    // Requests without a token guess nothing: not counted, answered 401.
    const none = await request(h.operatorApp).get('/api/v1/operator/warehouses').set(ADDRESS_HEADER, address);
    expect([none.status, none.body.code]).toEqual([401, 'invalid_operator_token']);
    // Another address, and tenants' API keys (counted apart), are not held back.
    expect((await withToken(OPERATOR_TOKEN, '198.51.100.24')).status).toBe(200);
    const tenant = await h.tenant();
    expect((await h.as(tenant.key).get('/api/v1/apps').set(ADDRESS_HEADER, address)).status).toBe(200);

    const refusals = h.logs
      .filter((line) => line.includes('operator token refused'))
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.message === 'operator token refused' && line.address === address);
    expect(refusals.map((line) => [line.level, line.failuresThisMinute])).toEqual([
      ['warn', 1],
      ['warn', 2],
      ['warn', 3],
    ]);
    const logged = h.logs.join('\n');
    for (const token of [...wrong, OPERATOR_TOKEN]) expect(logged).not.toContain(token);
  });
});

describe('the control-plane process: the operator API on OPERATOR_PORT only (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  const processes: ChildProcess[] = [];
  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('operator listener process');
  });
  afterAll(async () => {
    killAll(processes);
    await db?.drop();
  });

  it('serves the operator routes on OPERATOR_PORT, and 404 on PORT', async () => {
    const cp = await startControlPlaneProcess(
      (port) => ({
        ...process.env,
        DATABASE_URL: db.url,
        WAREHOUSE_URL: 'postgres://postgres@127.0.0.1:1/warehouse',
        CREDENTIALS_ENCRYPTION_KEYS: TEST_CREDENTIAL_KEYS,
        OPERATOR_API_TOKEN: OPERATOR_TOKEN,
        INTERNAL_TOKEN_INGESTION: randomBytes(24).toString('hex'),
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'warn',
        LOG_FORMAT: 'json',
        TASK_WORKER_ENABLED: 'false',
        JOB_WORKER_ENABLED: 'false',
        SCHEDULER_ENABLED: 'false',
        USAGE_METERING_ENABLED: 'false',
        DEAD_LETTER_INDEX_ENABLED: 'false',
      }),
      processes,
    );
    const get = (base: string) =>
      request(base).get('/api/v1/operator/warehouses').set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
    const onPublic = await get(cp.base);
    expect([onPublic.status, onPublic.body.code]).toEqual([404, 'not_found']);
    const onOperator = await get(cp.operatorBase);
    expect([onOperator.status, onOperator.body.data.map((w: { name: string }) => w.name)]).toEqual([
      200,
      ['default'],
    ]);
    expect((await request(cp.operatorBase).get('/health')).status).toBe(404);
    cp.child.kill('SIGTERM');
    expect(await exited(cp.child)).toBe(0);
  });
});
