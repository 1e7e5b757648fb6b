import { PassThrough } from 'node:stream';
import request from 'supertest';
import fc from 'fast-check';
import { defaultWarehouseTimeouts, guardedWarehousePools, WarehouseEngines } from '@pipeline/destinations';
import { createLogger } from '@pipeline/logger';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import {
  TenantChangePublisher,
  TenantChangeSubscriber,
  warehouseSchemaFor,
  type TenantChangeEvent,
} from '@pipeline/tenancy';
import { startHarness, TEST_WAREHOUSE_TOKEN, type Harness, type Tenant } from '../testing/harness';
import { trackRow } from '../testing/warehouse';
import { waitUntil } from '../testing/wait';
import { JobRunner } from '../jobs/job-runner';
import { PlacedWarehouses } from '../warehouse-access/account-warehouses';
import { WarehouseMoveExecutor } from '../warehouse-registry/warehouse-move-executor';

// A customer's postgres_warehouse app is a warehouse of the registry: created, rotated and
// removed with the app, only ever its own account's, never the default, and once the account is
// placed on it the control plane's engines write into the customer's server, in the app's
// schema, through the egress guard. The customer's server is an extra cluster on loopback,
// reached by a name the test's resolver answers; loopback is allowed as EGRESS_ALLOW_PRIVATE_RANGES
// allows a self-hosted network.

const PASSWORD = 'Customer-Loader-Pa55-5e1f0a';
const ROTATED = 'Customer-Rotated-Pa55-77c2d9';
const OPERATOR_TOKEN = 'operator-token-for-tests-0123456789abcdef';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const dns: Record<string, string[]> = { 'wh.example.com': ['127.0.0.1'] };
const egress = {
  allowPrivateRanges: ['127.0.0.0/8'],
  resolve: async (name: string) => dns[name] ?? Promise.reject(new Error(`ENOTFOUND ${name}`)),
};
const quiet = createLogger({ service: 'warehouse-app-registry-test', stream: new PassThrough() });

const clusters = useTestClusters();

describe('a postgres_warehouse app is the account’s warehouse (real PostgreSQL, Redis)', () => {
  let h: Harness;
  let t: Tenant;
  let cluster: TestCluster;
  let redis: RedisClient;
  let subscriber: TenantChangeSubscriber;
  const heard: TenantChangeEvent[] = [];
  const engines = WarehouseEngines.open(
    { processMaxConnections: 10, idleMs: 10_000 },
    {
      postgres: { timeouts: defaultWarehouseTimeouts, connect: guardedWarehousePools(egress) },
      clickhouse: { timeouts: defaultWarehouseTimeouts },
    },
  );

  const config = (fields: Record<string, unknown> = {}) => ({
    host: 'wh.example.com',
    port: cluster.port,
    database: 'analytics',
    user: 'loader',
    schema: 'pipeline_data',
    tlsMode: 'disable',
    ...fields,
  });
  const createApp = async (key = t.key, fields: Record<string, unknown> = {}) => {
    const response = await h
      .as(key)
      .post('/api/v1/apps')
      .send({
        appType: 'postgres_warehouse',
        displayName: `wh ${Math.random()}`,
        config: config(fields),
        credentials: { password: PASSWORD },
      });
    expect(response.status).toBe(201);
    return response.body.data.id as string;
  };
  const rowOf = async (appId: string) =>
    (
      (await h.db.dataSource.query(
        `SELECT id, name, owner, account_id, app_id, schema, host, port, database, "user", tls_mode,
                is_default, max_connections, password_ciphertext
           FROM warehouses WHERE app_id = $1`,
        [appId],
      )) as Record<string, unknown>[]
    )[0];
  const operator = () => ({
    get: (path: string) => request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
    post: (path: string) =>
      request(h.operatorApp).post(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
    patch: (path: string) =>
      request(h.operatorApp).patch(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  });
  const heardFor = (accountId: string) =>
    heard.filter((event) => event.kind === 'tenant_changed' && event.accountId === accountId).length;

  beforeAll(async () => {
    cluster = await clusters.start('customer warehouse registry', { passwordLogins: true });
    await cluster.query(`CREATE ROLE loader LOGIN PASSWORD '${PASSWORD}'`);
    await cluster.createDatabase('analytics');
    await cluster.query('GRANT CONNECT, CREATE ON DATABASE analytics TO loader');
    redis = createRedis({ REDIS_URL }, { logger: quiet, keyPrefix: 'control-plane:' });
    await redis.connect();
    subscriber = TenantChangeSubscriber.start({ REDIS_URL }, (event) => heard.push(event), quiet);
    await waitUntil('subscribed to tenant changes', async () => subscriber.live, 5000);
    h = await startHarness('warehouse app registry', {
      egress,
      operatorToken: OPERATOR_TOKEN,
      tenantChanges: new TenantChangePublisher(redis, quiet),
    });
    t = await h.tenant();
  }, 60_000);
  afterAll(async () => {
    await engines.close();
    await h.close();
    await subscriber.stop();
    await closeRedis(redis);
  });

  /** No log line holds a password. */
  afterEach(() => {
    expect(h.logs.join('')).not.toContain(PASSWORD);
    expect(h.logs.join('')).not.toContain(ROTATED);
  });

  it('creates a customer warehouse row with the app, its password sealed, listed with its account', async () => {
    const appId = await createApp();
    const row = await rowOf(appId);
    expect(row).toMatchObject({
      name: `app-${appId}`,
      owner: 'customer',
      account_id: t.accountId,
      app_id: appId,
      schema: 'pipeline_data',
      host: 'wh.example.com',
      port: cluster.port,
      database: 'analytics',
      user: 'loader',
      tls_mode: 'disable',
      is_default: false,
      max_connections: 5,
    });
    expect(row!.password_ciphertext).not.toContain(PASSWORD);
    expect(Buffer.from(String(row!.password_ciphertext), 'base64').toString('latin1')).not.toContain(
      PASSWORD,
    );
    const opened = h.services.warehouses.connectionOf(await h.services.warehouses.find(String(row!.id)));
    expect(opened).toMatchObject({ password: PASSWORD, owner: 'customer', host: 'wh.example.com' });

    const listed = await operator().get('/api/v1/operator/warehouses');
    expect(listed.status).toBe(200);
    expect(listed.body.data.find((w: { id: string }) => w.id === row!.id)).toMatchObject({
      owner: 'customer',
      accountId: t.accountId,
      appId,
      schema: 'pipeline_data',
      isDefault: false,
      password: '**********',
      accounts: 0,
    });
    expect(JSON.stringify(listed.body)).not.toContain(PASSWORD);
  });

  it('is never the default, never edited by an operator, never another account’s', async () => {
    const appId = await createApp();
    const { id } = (await rowOf(appId)) as { id: string };
    const setDefault = await operator().post(`/api/v1/operator/warehouses/${id}/default`);
    expect([setDefault.status, setDefault.body.code]).toEqual([409, 'warehouse_not_platform']);
    const edited = await operator()
      .patch(`/api/v1/operator/warehouses/${id}`)
      .send({ host: 'elsewhere.example' });
    expect([edited.status, edited.body.code]).toEqual([409, 'warehouse_owned_by_app']);

    const other = await h.tenant();
    await expect(h.services.placements.place(other.accountId, id)).rejects.toMatchObject({
      status: 409,
      code: 'warehouse_of_another_account',
    });
    expect((await h.services.placements.placementOf(other.accountId)).warehouseId).not.toBe(id);
    // A new account lands on the platform's default, whatever customer warehouses exist.
    const newcomer = await h.tenant();
    const placed = await h.as(newcomer.key).get('/api/v1/warehouse');
    expect(placed.body.data).toMatchObject({ owner: 'platform', appId: null });
  });

  it('answers the account’s warehouse, then the customer’s own with the app’s schema, where the engines write', async () => {
    const tenant = await h.tenant();
    const before = await h.as(tenant.key).get('/api/v1/warehouse');
    const defaultId = (await h.services.warehouses.find('default')).id;
    expect([before.status, before.body.data]).toEqual([
      200,
      {
        warehouseId: defaultId,
        owner: 'platform',
        engine: 'postgres',
        schema: warehouseSchemaFor(tenant.accountId),
        epoch: 1,
        status: 'active',
        statusDetail: null,
        statusChangedAt: expect.any(String),
        appId: null,
      },
    ]);
    const reader = await tenant.keyWith(['apps.read']);
    expect((await h.as(reader).get('/api/v1/warehouse')).status).toBe(200);
    const unscoped = await tenant.keyWith(['usage.read']);
    expect((await h.as(unscoped).get('/api/v1/warehouse')).status).toBe(403);

    const appId = await createApp(tenant.key);
    const { id } = (await rowOf(appId)) as { id: string };
    const placement = await h.services.placements.place(tenant.accountId, id);
    expect(placement).toEqual({ warehouseId: id, engine: 'postgres', schema: 'pipeline_data', epoch: 2 });
    const after = await h.as(tenant.key).get('/api/v1/warehouse');
    expect(after.body.data).toMatchObject({
      warehouseId: id,
      owner: 'customer',
      schema: 'pipeline_data',
      epoch: 2,
      status: 'active',
      appId,
    });
    expect(JSON.stringify(after.body)).not.toContain(PASSWORD);

    const resolved = await h.services.placements.resolve(tenant.accountId);
    expect(resolved.connection).toMatchObject({
      warehouseId: id,
      owner: 'customer',
      host: 'wh.example.com',
      port: cluster.port,
      database: 'analytics',
      user: 'loader',
      password: PASSWORD,
      tlsMode: 'disable',
    });

    // The control plane's readers and writers: the account's engine, through the guard.
    const located = await new PlacedWarehouses(
      (accountId) => h.services.placements.resolve(accountId),
      engines,
    ).locate(tenant.accountId);
    expect(located.account).toEqual({ accountId: tenant.accountId, schema: 'pipeline_data' });
    await located.engine.ensureAccount(located.account);
    const at = new Date('2026-11-25T10:00:00.000Z');
    const written = await located.engine.writeRows(located.account, [
      trackRow({ name: 'Signed Up', properties: { plan: 'pro' }, at }),
      trackRow({ name: 'Upgraded', at }),
    ]);
    expect(written).toMatchObject({ written: 2 });
    const landed = await cluster.query<{ event: string; owner: string }>(
      `SELECT e.event, pg_get_userbyid(c.relowner) AS owner
         FROM pipeline_data.events e, pg_class c
        WHERE c.oid = 'pipeline_data.events'::regclass ORDER BY e.event`,
      [],
      'analytics',
    );
    expect(landed).toEqual([
      { event: 'Signed Up', owner: 'loader' },
      { event: 'Upgraded', owner: 'loader' },
    ]);
  });

  it('checks the customer’s host at every connect: a name that moves inside is refused', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const { id } = (await rowOf(appId)) as { id: string };
    await h.services.placements.place(tenant.accountId, id);
    // Fresh engines: no pooled connection from an earlier test answers for the guard.
    const fresh = WarehouseEngines.open(
      { processMaxConnections: 2, idleMs: 1000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts, connect: guardedWarehousePools(egress) },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    const { connection } = await h.services.placements.resolve(tenant.accountId);
    try {
      await expect(fresh.for(connection).probe()).resolves.toBeUndefined();
      dns['moved.example.com'] = ['169.254.169.254'];
      const moved = {
        ...connection,
        warehouseId: `${connection.warehouseId}-moved`,
        host: 'moved.example.com',
      };
      const refused = await fresh
        .for(moved)
        .probe()
        .then(
          () => undefined,
          (error: unknown) => error,
        );
      expect(refused).toMatchObject({ name: 'EgressRefused' });
    } finally {
      delete dns['moved.example.com'];
      await fresh.close();
    }
  });

  it('rotates the password with the app and tells the caches; a new schema waits for a move', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const row = (await rowOf(appId)) as { id: string; password_ciphertext: string };
    await h.services.placements.place(tenant.accountId, row.id);
    const heardBefore = heardFor(tenant.accountId);

    await cluster.query(`ALTER ROLE loader PASSWORD '${ROTATED}'`);
    try {
      const rotated = await h
        .as(tenant.key)
        .patch(`/api/v1/apps/${appId}`)
        .send({ credentials: { password: ROTATED } });
      expect(rotated.status).toBe(200);
      expect(JSON.stringify(rotated.body)).not.toContain(ROTATED);
      const after = (await rowOf(appId)) as { id: string; password_ciphertext: string };
      expect(after.id).toBe(row.id);
      expect(after.password_ciphertext).not.toBe(row.password_ciphertext);
      expect(after.password_ciphertext).not.toContain(ROTATED);
      expect((await h.services.placements.resolve(tenant.accountId)).connection.password).toBe(ROTATED);
      await waitUntil('the rotation broadcast', async () => heardFor(tenant.accountId) > heardBefore, 5000);

      const reschema = await h
        .as(tenant.key)
        .patch(`/api/v1/apps/${appId}`)
        .send({ config: config({ schema: 'elsewhere' }) });
      expect([reschema.status, reschema.body.code]).toEqual([409, 'warehouse_app_in_use']);
      expect(((await rowOf(appId)) as { schema: string }).schema).toBe('pipeline_data');
      const stored = await h.as(tenant.key).get(`/api/v1/apps/${appId}`);
      expect(stored.body.data.config.schema).toBe('pipeline_data');
    } finally {
      await cluster.query(`ALTER ROLE loader PASSWORD '${PASSWORD}'`);
    }
  });

  it('shows a status the consumer reported, with its detail', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const { id } = (await rowOf(appId)) as { id: string };
    await h.services.placements.place(tenant.accountId, id);
    const detail = 'password authentication failed for user "loader"';
    // As the warehouse consumer reports it, over its internal endpoint.
    const reported = await request(h.app)
      .post(`/internal/v1/warehouses/${id}/status`)
      .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
      .send({ status: 'misconfigured', detail });
    expect(reported.status).toBe(204);
    const answer = await h.as(tenant.key).get('/api/v1/warehouse');
    expect(answer.body.data).toMatchObject({
      warehouseId: id,
      owner: 'customer',
      status: 'misconfigured',
      statusDetail: detail,
    });
  });

  it('refuses to delete or deactivate the app while the account is on it, else removes the row', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const { id } = (await rowOf(appId)) as { id: string };
    await h.services.placements.place(tenant.accountId, id);

    const deleted = await h.as(tenant.key).delete(`/api/v1/apps/${appId}`);
    expect([deleted.status, deleted.body.code]).toEqual([409, 'warehouse_app_in_use']);
    const deactivated = await h.as(tenant.key).patch(`/api/v1/apps/${appId}`).send({ credentials: null });
    expect([deactivated.status, deactivated.body.code]).toEqual([409, 'warehouse_app_in_use']);
    expect((await h.as(tenant.key).get(`/api/v1/apps/${appId}`)).body.data.state).toBe('active');
    expect(await rowOf(appId)).toMatchObject({ id });

    await h.services.placements.place(tenant.accountId, 'default');
    const removed = await h.as(tenant.key).delete(`/api/v1/apps/${appId}`);
    expect([removed.status, removed.body.data.state]).toEqual([200, 'deleted']);
    expect(await rowOf(appId)).toBeUndefined();
  });

  it('keeps the app while a move names its warehouse, and leaves a moving account where it is', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const { id } = (await rowOf(appId)) as { id: string };
    const defaultId = (await h.services.warehouses.find('default')).id;
    // An active move onto the customer's server names the warehouse.
    await h.db.dataSource.query(
      `INSERT INTO warehouse_moves (account_id, from_warehouse_id, to_warehouse_id, schema, stage)
       VALUES ($1, $2, $3, 'pipeline_data', 'queued')`,
      [tenant.accountId, defaultId, id],
    );
    const deleted = await h.as(tenant.key).delete(`/api/v1/apps/${appId}`);
    expect([deleted.status, deleted.body.code]).toEqual([409, 'warehouse_app_in_use']);
    expect((await h.as(tenant.key).get(`/api/v1/apps/${appId}`)).body.data.state).toBe('active');

    // While a move copies the account onto the customer's server, nothing else places it.
    await h.db.dataSource.query(
      'UPDATE account_warehouses SET move_to_warehouse_id = $2 WHERE account_id = $1',
      [tenant.accountId, id],
    );
    await expect(h.services.placements.place(tenant.accountId, id)).rejects.toMatchObject({
      status: 409,
      code: 'warehouse_move_in_progress',
    });
    expect(await h.services.placements.placementOf(tenant.accountId)).toMatchObject({
      warehouseId: defaultId,
      epoch: 1,
    });
    const deactivated = await h.as(tenant.key).patch(`/api/v1/apps/${appId}`).send({ credentials: null });
    expect([deactivated.status, deactivated.body.code]).toEqual([409, 'warehouse_app_in_use']);
  });

  it('moves an account online onto its own server, into the app’s schema', async () => {
    const tenant = await h.tenant();
    const other = await h.tenant();
    const appId = await createApp(tenant.key, { schema: 'moved_in' });
    const { id } = (await rowOf(appId)) as { id: string };
    const placed = new PlacedWarehouses((accountId) => h.services.placements.resolve(accountId), engines);
    const before = await placed.locate(tenant.accountId);
    expect(before.account.schema).toBe(warehouseSchemaFor(tenant.accountId));
    await before.engine.ensureAccount(before.account);
    const at = new Date('2026-11-24T08:00:00.000Z');
    await before.engine.writeRows(before.account, [
      trackRow({ name: 'Before Move', at }),
      trackRow({ name: 'Also Before', at }),
    ]);

    await expect(
      h.services.warehouseMoves.start({ accountId: other.accountId, toWarehouse: id }),
    ).rejects.toMatchObject({ status: 409, code: 'warehouse_of_another_account' });

    const runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: quiet,
      concurrency: 1,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 100,
      staleAfterMs: 10_000,
      maxAttempts: 2,
      retryBaseMs: 50,
      retryMaxMs: 200,
    }).register(
      new WarehouseMoveExecutor({
        dataSource: h.db.dataSource,
        registry: h.services.warehouses,
        engineFor: (connection) => engines.for(connection),
        logger: quiet,
        timings: { consumerWaitMs: 50, drainMs: 50, batchRows: 100, verifyRetryMs: 50 },
      }),
    );
    runner.start();
    try {
      const move = await h.services.warehouseMoves.start({ accountId: tenant.accountId, toWarehouse: id });
      const done = await waitUntil(
        'the move onto the customer’s server finished',
        async () => {
          const now = await h.services.warehouseMoves.get(move.id);
          return now.stage === 'done' || now.stage === 'failed' ? now : undefined;
        },
        60_000,
      );
      expect([done.stage, done.error, done.schema, done.toSchema]).toEqual([
        'done',
        null,
        warehouseSchemaFor(tenant.accountId),
        'moved_in',
      ]);
    } finally {
      await runner.stop();
    }
    expect(await h.services.placements.placementOf(tenant.accountId)).toMatchObject({
      warehouseId: id,
      schema: 'moved_in',
      epoch: 2,
    });
    const landed = await cluster.query<{ event: string }>(
      'SELECT event FROM moved_in.events ORDER BY event',
      [],
      'analytics',
    );
    expect(landed).toEqual([{ event: 'Also Before' }, { event: 'Before Move' }]);
    const after = await h.as(tenant.key).get('/api/v1/warehouse');
    expect(after.body.data).toMatchObject({ owner: 'customer', schema: 'moved_in', appId });
    // Off the customer's server it does not move: retiring there would drop the customer's schema.
    await expect(
      h.services.warehouseMoves.start({ accountId: tenant.accountId, toWarehouse: 'default' }),
    ).rejects.toMatchObject({ status: 409, code: 'warehouse_not_platform' });
    // The account is on its server: the app stays while it is.
    const deleted = await h.as(tenant.key).delete(`/api/v1/apps/${appId}`);
    expect([deleted.status, deleted.body.code]).toEqual([409, 'warehouse_app_in_use']);
  }, 90_000);

  it('keeps every valid connection field and password as entered, through SQL and the cipher', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const pgName = fc
      .string({ minLength: 1, maxLength: 20, unit: 'grapheme' })
      // eslint-disable-next-line no-control-regex -- the app type refuses control characters
      .filter((name) => !/[\u0000-\u001f\u007f]/.test(name) && Buffer.byteLength(name) <= 63);
    const fields = fc.record({
      host: fc.domain(),
      port: fc.integer({ min: 1, max: 65535 }),
      database: pgName,
      user: pgName,
      password: fc.string({ maxLength: 200, unit: 'binary' }).filter((p) => !p.includes('\u0000')),
      tlsMode: fc.constantFrom('disable' as const, 'require' as const, 'verify-full' as const),
      schema: fc.stringMatching(/^[a-z_][a-z0-9_]{0,62}$/),
    });
    await fc.assert(
      fc.asyncProperty(fields, async (entered) => {
        await h.db.dataSource.transaction((manager) =>
          h.services.warehouses.saveCustomer(manager, { ...entered, appId, accountId: tenant.accountId }),
        );
        const entity = await h.services.warehouses.ofApp(appId);
        expect(entity).not.toBeNull();
        expect(entity!.schema).toBe(entered.schema);
        const { host, port, database, user, password, tlsMode, owner } = h.services.warehouses.connectionOf(
          entity!,
        );
        expect({ host, port, database, user, password, tlsMode, owner }).toEqual({
          host: entered.host,
          port: entered.port,
          database: entered.database,
          user: entered.user,
          password: entered.password,
          tlsMode: entered.tlsMode,
          owner: 'customer',
        });
        if (entered.password.length >= 8) expect(entity!.passwordCiphertext).not.toContain(entered.password);
      }),
      { numRuns: 40 },
    );
  });

  it('answers a name longer than PostgreSQL keeps as the app’s own setting', async () => {
    const tenant = await h.tenant();
    const appId = await createApp(tenant.key);
    const refused = h.db.dataSource.transaction((manager) =>
      h.services.warehouses.saveCustomer(manager, {
        appId,
        accountId: tenant.accountId,
        host: 'wh.example.com',
        port: cluster.port,
        // 32 characters, 64 bytes: PostgreSQL would cut it and reach another database.
        database: 'é'.repeat(32),
        user: 'loader',
        password: PASSWORD,
        tlsMode: 'disable',
        schema: 'pipeline_data',
      }),
    );
    await expect(refused).rejects.toMatchObject({
      status: 422,
      code: 'invalid_app_settings',
      details: {
        errors: [{ path: 'body.config.database', message: '1 to 63 bytes, no control characters' }],
      },
    });
    expect(await rowOf(appId)).toMatchObject({ database: 'analytics' });
  });

  it('registers apps saved before the registry knew them, once, and reports those it refuses', async () => {
    const appId = await createApp();
    await h.db.dataSource.query('DELETE FROM warehouses WHERE app_id = $1', [appId]);
    // Saved before the registry counted a name in bytes: 32 characters, 64 bytes.
    const tooLong = await createApp();
    await h.db.dataSource.query('DELETE FROM warehouses WHERE app_id = $1', [tooLong]);
    await h.db.dataSource.query(
      `UPDATE apps SET config = jsonb_set(config, '{database}', to_jsonb(repeat('é', 32))) WHERE id = $1`,
      [tooLong],
    );
    expect(await h.services.apps.registerWarehouseApps()).toEqual({
      registered: 1,
      refused: [{ appId: tooLong, code: 'invalid_app_settings' }],
    });
    expect(await rowOf(appId)).toMatchObject({
      owner: 'customer',
      account_id: t.accountId,
      schema: 'pipeline_data',
    });
    expect(await rowOf(tooLong)).toBeUndefined();
    expect(await h.services.apps.registerWarehouseApps()).toEqual({
      registered: 0,
      refused: [{ appId: tooLong, code: 'invalid_app_settings' }],
    });
    const row = (await rowOf(appId)) as { id: string };
    expect(h.services.warehouses.connectionOf(await h.services.warehouses.find(row.id)).password).toBe(
      PASSWORD,
    );
  });
});
