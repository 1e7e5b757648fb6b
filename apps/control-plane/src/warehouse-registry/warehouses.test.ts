import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import fc from 'fast-check';
import { defaultWarehouseTimeouts, WarehouseEngines } from '@pipeline/destinations';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import {
  ControlPlaneClient,
  ControlPlaneUnavailable,
  TenantChangePublisher,
  TenantChangeSubscriber,
  WarehouseQuestionRefused,
  type TenantChangeEvent,
  warehouseSchemaFor,
} from '@pipeline/tenancy';
import { AccountService } from '../accounts/account.service';
import { CredentialCipher } from '../apps/credential-cipher';
import { createDataSource } from '../data-model';
import {
  exampleSettings,
  startHarness,
  TEST_CREDENTIAL_KEYS,
  TEST_INTERNAL_TOKEN,
  TEST_WAREHOUSE_TOKEN,
  testDeliveryToken,
  type Harness,
} from '../testing/harness';
import { startScratchWarehouse, trackRow, userRow, type ScratchWarehouse } from '../testing/warehouse';
import { waitUntil } from '../testing/wait';
import { WarehouseRegistry } from './warehouse-registry';

const OPERATOR_TOKEN = 'operator-token-for-tests-0123456789abcdef';
const WAREHOUSE_PASSWORD = 'wh-secret-Pa55word-7f3c9a';
const WAREHOUSE_URL = `postgres://loader:${WAREHOUSE_PASSWORD}@127.0.0.1:5432/warehouse_one?sslmode=require`;
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const quiet = createLogger({ service: 'warehouses-test', stream: new PassThrough() });

const operator = (h: Harness) => ({
  get: (path: string) => request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  post: (path: string) => request(h.operatorApp).post(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
});

const second = (over: Record<string, unknown> = {}) => ({
  name: 'second',
  host: 'warehouse-2.internal',
  port: 6432,
  database: 'wh2',
  user: 'loader2',
  password: 'second-Secret-91b2',
  tlsMode: 'verify-full',
  maxConnections: 4,
  ...over,
});

async function placementsOf(
  h: Harness,
): Promise<Map<string, { warehouse_id: string; schema: string; epoch: number }>> {
  const rows = (await h.db.dataSource.query(
    'SELECT account_id, warehouse_id, schema, epoch FROM account_warehouses',
  )) as { account_id: string; warehouse_id: string; schema: string; epoch: number }[];
  return new Map(rows.map((row) => [row.account_id, row]));
}

describe('the default warehouse from WAREHOUSE_URL (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('warehouse bootstrap', { skipWarehouseBootstrap: true });
  });
  afterAll(() => h.close());

  it('creates it once at the upgrade and places the accounts that existed before', async () => {
    // Accounts of the release before: created straight in the table, with no warehouse at all.
    const before = (await h.db.dataSource.query(
      "INSERT INTO accounts (name) VALUES ('Old one'), ('Old two') RETURNING id",
    )) as { id: string }[];
    // One created by the service while no default exists yet stays unplaced until the bootstrap.
    const early = await new AccountService(h.db.dataSource).create('Early');
    expect((await placementsOf(h)).size).toBe(0);

    expect(await h.services.warehouses.bootstrap(WAREHOUSE_URL)).toEqual({ created: true, placed: 3 });

    const [row] = (await h.db.dataSource.query('SELECT * FROM warehouses')) as Record<string, unknown>[];
    expect(row).toMatchObject({
      name: 'default',
      engine: 'postgres',
      owner: 'platform',
      account_id: null,
      host: '127.0.0.1',
      port: 5432,
      database: 'warehouse_one',
      user: 'loader',
      tls_mode: 'require',
      max_connections: 10,
      is_default: true,
      status: 'active',
    });
    expect(JSON.stringify(row)).not.toContain(WAREHOUSE_PASSWORD);
    const placements = await placementsOf(h);
    for (const id of [...before.map((b) => b.id), early.id])
      expect(placements.get(id)).toEqual({
        account_id: id,
        warehouse_id: row!.id,
        schema: warehouseSchemaFor(id),
        epoch: 1,
      });

    // The next start changes nothing.
    expect(await h.services.warehouses.bootstrap('postgres://other@elsewhere:1/x')).toEqual({
      created: false,
      placed: 0,
    });
    expect(await h.db.dataSource.query('SELECT count(*)::int AS n FROM warehouses')).toEqual([{ n: 1 }]);
    const warned = h.logs.filter((line) => line.includes('WAREHOUSE_URL differs'));
    expect(warned).toHaveLength(1);
    expect(JSON.parse(warned[0]!)).toMatchObject({
      level: 'warn',
      differs: ['host', 'port', 'database', 'user'],
    });
    const resolved = await h.services.placements.resolve(early.id);
    expect(resolved.connection).toEqual({
      warehouseId: row!.id,
      engine: 'postgres',
      host: '127.0.0.1',
      port: 5432,
      database: 'warehouse_one',
      user: 'loader',
      password: WAREHOUSE_PASSWORD,
      tlsMode: 'require',
      owner: 'platform',
      maxConnections: 10,
    });
  });
});

describe('two control planes starting at once (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('warehouse bootstrap race', { skipWarehouseBootstrap: true });
  });
  afterAll(() => h.close());

  it('create one default between them, and every account is placed once', async () => {
    await h.db.dataSource.query("INSERT INTO accounts (name) SELECT 'a' || g FROM generate_series(1, 20) g");
    const sources = [1, 2, 3].map(() => createDataSource({ url: h.db.url, poolMax: 2 }));
    try {
      await Promise.all(sources.map((source) => source.initialize()));
      const results = await Promise.all(
        sources.map((source) =>
          new WarehouseRegistry(source, new CredentialCipher(TEST_CREDENTIAL_KEYS)).bootstrap(WAREHOUSE_URL),
        ),
      );
      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(results.reduce((sum, r) => sum + r.placed, 0)).toBe(20);
      expect(await h.db.dataSource.query('SELECT count(*)::int AS n FROM warehouses')).toEqual([{ n: 1 }]);
      expect((await placementsOf(h)).size).toBe(20);
    } finally {
      await Promise.all(sources.map((source) => (source.isInitialized ? source.destroy() : undefined)));
    }
  });
});

describe('operator API and placements (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('warehouse operator api', {
      operatorToken: OPERATOR_TOKEN,
      warehouseUrl: WAREHOUSE_URL,
    });
  });
  afterAll(() => h.close());

  it('refuses requests without the operator token, a wrong one and an API key', async () => {
    const tenant = await h.tenant();
    const none = await request(h.operatorApp).get('/api/v1/operator/warehouses');
    const wrong = await request(h.operatorApp)
      .get('/api/v1/operator/warehouses')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}x`);
    const apiKey = await request(h.operatorApp)
      .get('/api/v1/operator/warehouses')
      .set('Authorization', `Bearer ${tenant.key}`);
    const internal = await request(h.operatorApp)
      .get('/api/v1/operator/warehouses')
      .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`);
    for (const answer of [none, wrong, apiKey, internal]) {
      expect(answer.status).toBe(401);
      expect(answer.body.code).toBe('invalid_operator_token');
    }
  });

  it('lists the default with its accounts and status, the password masked', async () => {
    const tenant = await h.tenant();
    const { body, status } = await operator(h).get('/api/v1/operator/warehouses');
    expect(status).toBe(200);
    const [only] = body.data;
    expect(body.data).toHaveLength(1);
    expect(only).toMatchObject({
      name: 'default',
      host: '127.0.0.1',
      port: 5432,
      database: 'warehouse_one',
      user: 'loader',
      password: '**********',
      tlsMode: 'require',
      isDefault: true,
      status: 'active',
      statusDetail: null,
    });
    const placed = await operator(h).get(`/api/v1/operator/warehouses/${only.id}/accounts`);
    expect(only.accounts).toBe(placed.body.data.length);
    expect(placed.body.data).toContainEqual(
      expect.objectContaining({
        accountId: tenant.accountId,
        schema: warehouseSchemaFor(tenant.accountId),
        epoch: 1,
      }),
    );
    expect(JSON.stringify(body)).not.toContain(WAREHOUSE_PASSWORD);
  });

  it('answers invalid fields 400, a taken name 409 and an unknown warehouse 404', async () => {
    const invalid = [
      { port: 0 },
      { port: 70000 },
      { name: 'Has Spaces' },
      { tlsMode: 'prefer' },
      { maxConnections: 0 },
      { host: '' },
      { host: 'a/b' },
      { database: 'x'.repeat(64) },
    ];
    for (const over of invalid) {
      const answer = await operator(h).post('/api/v1/operator/warehouses').send(second(over));
      expect({ over, status: answer.status, code: answer.body.code }).toEqual({
        over,
        status: 400,
        code: 'validation_failed',
      });
    }
    const missing = await operator(h).post('/api/v1/operator/warehouses').send({ name: 'x' });
    expect([missing.status, missing.body.code]).toEqual([400, 'validation_failed']);
    const taken = await operator(h)
      .post('/api/v1/operator/warehouses')
      .send(second({ name: 'default' }));
    expect([taken.status, taken.body.code]).toEqual([409, 'warehouse_name_taken']);
    for (const unknown of ['nope', '00000000-0000-4000-8000-000000000000']) {
      const answer = await operator(h).get(`/api/v1/operator/warehouses/${unknown}`);
      expect([answer.status, answer.body.code]).toEqual([404, 'warehouse_not_found']);
    }
    expect(JSON.stringify(h.logs)).not.toContain('second-Secret-91b2');
  });

  it('places new accounts on the default, and on the new one after set-default', async () => {
    const before = await h.tenant();
    const created = await operator(h)
      .post('/api/v1/operator/warehouses')
      .send(second({ name: 'next' }));
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      name: 'next',
      host: 'warehouse-2.internal',
      port: 6432,
      password: '**********',
      isDefault: false,
      maxConnections: 4,
    });
    const next = created.body.data.id as string;
    const stillOld = await h.tenant();
    const setDefault = await operator(h).post('/api/v1/operator/warehouses/next/default');
    expect(setDefault.body.data).toMatchObject({ id: next, isDefault: true });
    const after = await h.tenant();

    const placements = await placementsOf(h);
    const defaultId = (await h.services.warehouses.find('default')).id;
    expect(placements.get(before.accountId)?.warehouse_id).toBe(defaultId);
    expect(placements.get(stillOld.accountId)?.warehouse_id).toBe(defaultId);
    expect(placements.get(after.accountId)?.warehouse_id).toBe(next);
    const flags = await h.db.dataSource.query('SELECT name, is_default FROM warehouses ORDER BY name');
    expect(flags).toEqual([
      { name: 'default', is_default: false },
      { name: 'next', is_default: true },
    ]);
    const accounts = await operator(h).get(`/api/v1/operator/warehouses/${next}/accounts`);
    expect(accounts.body.data.map((a: { accountId: string }) => a.accountId)).toEqual([after.accountId]);

    // Its password is only ever handed to the warehouse consumer.
    expect((await h.services.placements.resolve(after.accountId)).connection).toMatchObject({
      warehouseId: next,
      password: 'second-Secret-91b2',
      tlsMode: 'verify-full',
      maxConnections: 4,
    });
    await operator(h).post('/api/v1/operator/warehouses/default/default');
  });

  it('keeps exactly one default when defaults are set at once', async () => {
    const names = ['race-a', 'race-b', 'race-c', 'race-d'];
    for (const name of names)
      expect((await operator(h).post('/api/v1/operator/warehouses').send(second({ name }))).status).toBe(201);
    const answers = await Promise.all([
      ...names.map((name) => operator(h).post(`/api/v1/operator/warehouses/${name}/default`)),
      operator(h)
        .post('/api/v1/operator/warehouses')
        .send(second({ name: 'race-e', isDefault: true })),
      operator(h)
        .post('/api/v1/operator/warehouses')
        .send(second({ name: 'race-f', isDefault: true })),
    ]);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 201, 201]);
    const defaults = (await h.db.dataSource.query('SELECT name FROM warehouses WHERE is_default')) as {
      name: string;
    }[];
    expect(defaults).toHaveLength(1);
    expect([...names, 'race-e', 'race-f']).toContain(defaults[0]?.name);
    await operator(h).post('/api/v1/operator/warehouses/default/default');
  });

  it('shows the account its warehouse and status on a source', async () => {
    const tenant = await h.tenant();
    const stripe = await h
      .as(tenant.key)
      .post('/api/v1/apps')
      .send({ appType: 'stripe', displayName: 'Stripe', ...exampleSettings('stripe') });
    expect(stripe.status).toBe(201);
    const source = await h
      .as(tenant.key)
      .post('/api/v1/sources')
      .send({ appId: stripe.body.data.id, syncType: 'stripe', importTasks: ['charges'] });
    expect(source.status).toBe(201);
    const placement = await h.services.placements.placementOf(tenant.accountId);
    expect(source.body.data.warehouse).toEqual({
      warehouseId: placement.warehouseId,
      status: 'active',
      schema: warehouseSchemaFor(tenant.accountId),
      tables: ['stripe_charges'],
    });
  });
});

describe('the operator API switched off (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('warehouse operator off');
  });
  afterAll(() => h.close());

  it('answers 404 whatever token is presented, on either listener', async () => {
    for (const app of [h.app, h.operatorApp])
      for (const token of [undefined, OPERATOR_TOKEN]) {
        const call = request(app).get('/api/v1/operator/warehouses');
        const answer = await (token ? call.set('Authorization', `Bearer ${token}`) : call);
        expect([answer.status, answer.body.code]).toEqual([404, 'not_found']);
      }
  });
});

describe('internal warehouse endpoints (real PostgreSQL, HTTP)', () => {
  let h: Harness;
  let server: Server;
  let base: string;
  let consumer: ControlPlaneClient;
  beforeAll(async () => {
    h = await startHarness('warehouse internal', { warehouseUrl: WAREHOUSE_URL });
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    consumer = new ControlPlaneClient(base, TEST_WAREHOUSE_TOKEN, quiet);
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await h.close();
  });

  it("resolves an account's warehouse with its password for the warehouse consumer only", async () => {
    const tenant = await h.tenant();
    const resolved = await consumer.resolveWarehouse(tenant.accountId);
    const defaultId = (await h.services.warehouses.find('default')).id;
    expect(resolved).toEqual({
      placement: {
        warehouseId: defaultId,
        engine: 'postgres',
        schema: warehouseSchemaFor(tenant.accountId),
        epoch: 1,
      },
      connection: {
        warehouseId: defaultId,
        engine: 'postgres',
        host: '127.0.0.1',
        port: 5432,
        database: 'warehouse_one',
        user: 'loader',
        password: WAREHOUSE_PASSWORD,
        tlsMode: 'require',
        owner: 'platform',
        maxConnections: 10,
      },
      // The version the account's warehouse binds (docs/management-api.md#functions): none here.
      function: null,
    });
    for (const token of [TEST_INTERNAL_TOKEN, testDeliveryToken('amplitude'), 'x'.repeat(40)]) {
      const refused = await request(h.app)
        .post('/internal/v1/warehouses/resolve')
        .set('Authorization', `Bearer ${token}`)
        .send({ accountId: tenant.accountId });
      expect([refused.status, refused.body.code]).toEqual([401, 'invalid_service_token']);
      expect(JSON.stringify(refused.body)).not.toContain(WAREHOUSE_PASSWORD);
    }
    await expect(
      new ControlPlaneClient(base, TEST_INTERNAL_TOKEN, quiet).resolveWarehouse(tenant.accountId),
    ).rejects.toBeInstanceOf(ControlPlaneUnavailable);
  });

  it('answers an unknown account 404 account_not_found', async () => {
    for (const accountId of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const refused = await consumer.resolveWarehouse(accountId).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(WarehouseQuestionRefused);
      expect(refused).toMatchObject({ status: 404, code: 'account_not_found' });
    }
  });

  it('never hands ingestion a warehouse password: the write key carries the placement only', async () => {
    const tenant = await h.tenant();
    const key = await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'site' });
    const resolved = await new ControlPlaneClient(base, TEST_INTERNAL_TOKEN, quiet).resolve(
      key.body.data.key,
    );
    const defaultId = (await h.services.warehouses.find('default')).id;
    expect(resolved?.warehouse).toEqual({
      kind: 'warehouse',
      warehouseId: defaultId,
      engine: 'postgres',
      schema: warehouseSchemaFor(tenant.accountId),
      epoch: 1,
    });
    const lookedUp = await new ControlPlaneClient(base, testDeliveryToken('amplitude'), quiet).lookup(
      key.body.data.id,
    );
    for (const record of [resolved, lookedUp]) {
      const text = JSON.stringify(record);
      expect(text).not.toContain(WAREHOUSE_PASSWORD);
      expect(text).not.toContain('password');
    }
  });

  it('records a reported status, its time only when it changes, and shows it in the metrics', async () => {
    const defaultId = (await h.services.warehouses.find('default')).id;
    const statusOf = async () =>
      (
        (await h.db.dataSource.query(
          'SELECT status, status_detail, status_changed_at FROM warehouses WHERE id = $1',
          [defaultId],
        )) as { status: string; status_detail: string | null; status_changed_at: Date }[]
      )[0]!;
    await consumer.reportWarehouseStatus(defaultId, 'unavailable', 'connection refused');
    const first = await statusOf();
    expect(first).toMatchObject({ status: 'unavailable', status_detail: 'connection refused' });
    await consumer.reportWarehouseStatus(defaultId, 'unavailable', 'timeout');
    const again = await statusOf();
    expect(again).toMatchObject({ status: 'unavailable', status_detail: 'timeout' });
    expect(again.status_changed_at.getTime()).toBe(first.status_changed_at.getTime());

    const metrics = (await request(h.app).get('/metrics')).text;
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="default",status="unavailable"} 1');
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="default",status="active"} 0');

    await consumer.reportWarehouseStatus(defaultId, 'active');
    const back = await statusOf();
    expect(back).toMatchObject({ status: 'active', status_detail: null });
    expect(back.status_changed_at.getTime()).toBeGreaterThan(first.status_changed_at.getTime());
    expect((await request(h.app).get('/metrics')).text).toContain(
      'pipeline_warehouse_status{warehouse="default",status="active"} 1',
    );
  });

  it('refuses bad reports with their documented codes', async () => {
    const defaultId = (await h.services.warehouses.find('default')).id;
    const report = (id: string, body: object, token = TEST_WAREHOUSE_TOKEN) =>
      request(h.app)
        .post(`/internal/v1/warehouses/${id}/status`)
        .set('Authorization', `Bearer ${token}`)
        .send(body);
    const cases: [string, object, number, string][] = [
      [defaultId, { status: 'broken' }, 400, 'validation_failed'],
      [defaultId, { status: 'unavailable', detail: 'x'.repeat(501) }, 400, 'validation_failed'],
      [defaultId, {}, 400, 'validation_failed'],
      ['00000000-0000-4000-8000-000000000000', { status: 'active' }, 404, 'warehouse_not_found'],
      ['not-an-id', { status: 'active' }, 404, 'warehouse_not_found'],
    ];
    for (const [id, body, status, code] of cases) {
      const answer = await report(id, body);
      expect({ body, status: answer.status, code: answer.body.code }).toEqual({ body, status, code });
    }
    const ingestion = await report(defaultId, { status: 'misconfigured' }, TEST_INTERNAL_TOKEN);
    expect([ingestion.status, ingestion.body.code]).toEqual([401, 'invalid_service_token']);
    expect((await h.services.warehouses.find(defaultId)).status).toBe('active');
  });

  it('keeps any password and detail intact from the operator API to the consumer (generative)', async () => {
    const operatorHarness = await startHarness('warehouse passwords', { operatorToken: OPERATOR_TOKEN });
    try {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.string({ maxLength: 200 }), async (password) => {
          n += 1;
          const created = await operator(operatorHarness)
            .post('/api/v1/operator/warehouses')
            .send(second({ name: `gen-${n}`, password }));
          expect(created.status).toBe(201);
          expect(created.body.data.password).toBe('**********');
          const entity = await operatorHarness.services.warehouses.find(`gen-${n}`);
          expect(operatorHarness.services.warehouses.connectionOf(entity).password).toBe(password);
        }),
        { numRuns: 25 },
      );
      await fc.assert(
        fc.asyncProperty(fc.string({ maxLength: 500 }), async (detail) => {
          const defaultId = (await h.services.warehouses.find('default')).id;
          await consumer.reportWarehouseStatus(defaultId, 'misconfigured', detail);
          // PostgreSQL text holds no NUL: the registry drops them rather than lose the report.
          expect((await h.services.warehouses.find(defaultId)).statusDetail).toBe(detail.replace(/\0/g, ''));
        }),
        { numRuns: 25 },
      );
    } finally {
      await operatorHarness.close();
    }
  });
});

describe('sizes and checks through the PostgreSQL engine (real PostgreSQL)', () => {
  let scratch: ScratchWarehouse;
  let engines: WarehouseEngines;
  let h: Harness;
  beforeAll(async () => {
    scratch = await startScratchWarehouse('warehouse sizes');
    engines = WarehouseEngines.open(
      { processMaxConnections: 6, idleMs: 5000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    h = await startHarness('warehouse sizes', {
      warehouse: scratch.warehouses,
      warehouseUrl: scratch.url,
      operatorToken: OPERATOR_TOKEN,
      engineFor: (connection) => engines.for(connection),
    });
  });
  afterAll(async () => {
    await h.close();
    await engines.close();
    await scratch.drop();
  });

  it("sums the placed accounts' storage", async () => {
    const seeded = await h.tenant();
    const empty = await h.tenant();
    await h.tenant();
    await scratch.seed(seeded.accountId, [
      trackRow({ name: 'Signed Up', at: new Date('2026-01-02T03:04:05Z') }),
      userRow('u1', new Date('2026-01-02T03:04:05Z')),
    ]);
    await scratch.createSchema(empty.accountId);
    const { rows } = await scratch.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(c.oid)) AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p', 'm')`,
      [[warehouseSchemaFor(seeded.accountId), warehouseSchemaFor(empty.accountId)]],
    );
    const expected = Number(rows[0]?.bytes);
    expect(expected).toBeGreaterThan(0);
    const listed = await operator(h).get('/api/v1/operator/warehouses');
    expect(listed.body.data).toEqual([
      expect.objectContaining({ name: 'default', accounts: 3, sizeBytes: expected, status: 'active' }),
    ]);
  });

  it('records what a check met: active, unavailable or misconfigured', async () => {
    const add = (over: Record<string, unknown>) =>
      operator(h)
        .post('/api/v1/operator/warehouses')
        .send(second({ host: '127.0.0.1', port: 5432, user: 'postgres', tlsMode: 'disable', ...over }));
    expect((await add({ name: 'closed-port', port: 1 })).status).toBe(201);
    expect((await add({ name: 'no-database', database: 'no_such_database_here' })).status).toBe(201);
    const check = async (name: string) => {
      const answer = await operator(h).post(`/api/v1/operator/warehouses/${name}/check`);
      expect(answer.status).toBe(200);
      return answer.body.data as { status: string; statusDetail: string | null };
    };
    expect(await check('closed-port')).toMatchObject({
      status: 'unavailable',
      statusDetail: 'probe failed (unavailable): connect ECONNREFUSED 127.0.0.1:1',
    });
    expect(await check('no-database')).toMatchObject({
      status: 'misconfigured',
      statusDetail: 'probe failed (misconfigured): database "no_such_database_here" does not exist',
    });
    expect(await check('default')).toMatchObject({ status: 'active', statusDetail: null });
    const metrics = (await request(h.app).get('/metrics')).text;
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="closed-port",status="unavailable"} 1');
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="no-database",status="misconfigured"} 1');
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="default",status="active"} 1');
  });
});

describe('placement and connection changes reach the caches (real PostgreSQL, Redis)', () => {
  let redis: RedisClient;
  let subscriber: TenantChangeSubscriber;
  const heard: TenantChangeEvent[] = [];
  let h: Harness;
  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger: quiet, keyPrefix: 'control-plane:' });
    await redis.connect();
    subscriber = TenantChangeSubscriber.start({ REDIS_URL }, (event) => heard.push(event), quiet);
    await waitUntil('subscribed to tenant changes', async () => subscriber.live);
    h = await startHarness('warehouse changes', {
      operatorToken: OPERATOR_TOKEN,
      warehouseUrl: WAREHOUSE_URL,
      tenantChanges: new TenantChangePublisher(redis, quiet),
    });
  });
  afterAll(async () => {
    await h.close();
    await subscriber.stop();
    await closeRedis(redis);
  });

  const heardFor = (accountId: string) =>
    heard.filter((event) => event.kind === 'tenant_changed' && event.accountId === accountId).length;

  it("broadcasts every placed account when a warehouse's connection changes", async () => {
    const a = await h.tenant();
    const b = await h.tenant();
    const rotated = 'rotated-Secret-5a6b';
    const answer = await request(h.operatorApp)
      .patch('/api/v1/operator/warehouses/default')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ password: rotated, host: 'warehouse-1.internal', maxConnections: 7 });
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({
      host: 'warehouse-1.internal',
      password: '**********',
      maxConnections: 7,
    });
    expect(JSON.stringify(answer.body)).not.toContain(rotated);
    await waitUntil(
      'both accounts broadcast',
      async () => heardFor(a.accountId) >= 1 && heardFor(b.accountId) >= 1,
      5000,
    );
    expect((await h.services.placements.resolve(a.accountId)).connection).toMatchObject({
      host: 'warehouse-1.internal',
      port: 5432,
      database: 'warehouse_one',
      user: 'loader',
      password: rotated,
      tlsMode: 'require',
      maxConnections: 7,
    });
    const invalid = await request(h.operatorApp)
      .patch('/api/v1/operator/warehouses/default')
      .set('Authorization', `Bearer ${OPERATOR_TOKEN}`)
      .send({ port: 0 });
    expect([invalid.status, invalid.body.code]).toEqual([400, 'validation_failed']);
    expect(JSON.stringify(h.logs)).not.toContain(rotated);
  });

  it('broadcasts an account placed at its first resolution', async () => {
    const [{ id }] = (await h.db.dataSource.query(
      "INSERT INTO accounts (name) VALUES ('Unplaced') RETURNING id",
    )) as [{ id: string }];
    const placement = await h.services.placements.placementOf(id);
    expect(placement).toMatchObject({ schema: warehouseSchemaFor(id), epoch: 1, status: 'active' });
    await waitUntil('the new placement broadcast', async () => heardFor(id) === 1, 5000);
  });
});
