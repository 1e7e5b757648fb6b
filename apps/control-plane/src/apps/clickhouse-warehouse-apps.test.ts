import { createServer, type Server } from 'node:net';
import { useClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

// A customer's own ClickHouse as a clickhouse_warehouse app: saved only once it answers, tested
// again on demand, a warehouse of the registry with engine clickhouse, kept while the account is
// placed on it, and never an echo of its password. The customer's server is the chdb-backed
// test server on loopback, reached by a name the harness's resolver answers; loopback is allowed
// there the way EGRESS_ALLOW_PRIVATE_RANGES allows a self-hosted network. A second control plane
// without that setting refuses loopback and metadata hosts before a packet is sent.

const PASSWORD = 'Ch-Loader-Pa55-never-echoed-5b2';
const WRONG = 'Ch-Wrong-Pa55-also-secret-0c4';
const dns: Record<string, string[]> = {
  'ch.example.com': ['127.0.0.1'],
  'internal.example.com': ['10.0.0.5'],
  localhost: ['127.0.0.1', '::1'],
};
const resolve = async (name: string) => dns[name] ?? Promise.reject(new Error(`ENOTFOUND ${name}`));

const server = useClickHouseTestServer({ user: 'loader', password: PASSWORD });

describe('customer-owned ClickHouse warehouse apps (real ClickHouse engine, real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;

  const config = (fields: Record<string, unknown> = {}) => ({
    host: 'ch.example.com',
    port: server.current.port,
    database: 'pipeline_ch',
    user: 'loader',
    tlsMode: 'disable',
    ...fields,
  });
  const create = (body: { config: object; credentials?: object }, key = t.key) =>
    h
      .as(key)
      .post('/api/v1/apps')
      .send({ appType: 'clickhouse_warehouse', displayName: `ch ${Math.random()}`, ...body });
  const testConnection = (id: string, key = t.key) =>
    h.as(key).post(`/api/v1/apps/${id}/test-connection`).send();
  const rowOf = async (appId: string) =>
    (
      (await h.db.dataSource.query(
        `SELECT id, name, engine, owner, account_id, app_id, schema, host, port, database, "user",
                tls_mode, password_ciphertext
           FROM warehouses WHERE app_id = $1`,
        [appId],
      )) as Record<string, unknown>[]
    )[0];

  beforeAll(async () => {
    h = await startHarness('clickhouse warehouse apps', {
      egress: { allowPrivateRanges: ['127.0.0.0/8'], resolve },
    });
    t = await h.tenant();
  }, 60_000);
  afterAll(() => h.close());

  /** No answer and no log line holds the password. */
  afterEach(() => {
    expect(h.logs.join('')).not.toContain(PASSWORD);
    expect(h.logs.join('')).not.toContain(WRONG);
  });

  it('refuses a wrong password at the field, saves the right one, and tests it on demand', async () => {
    const before = await h.as(t.key).get('/api/v1/apps?app_type=clickhouse_warehouse&limit=100');
    const wrong = await create({ config: config(), credentials: { password: WRONG } });
    expect([wrong.status, wrong.body.code, wrong.body.errors]).toEqual([
      422,
      'warehouse_login_failed',
      [{ path: 'body.config', message: 'The server refused the login: a wrong user or password.' }],
    ]);
    expect(JSON.stringify(wrong.body)).not.toContain(WRONG);
    const unchanged = await h.as(t.key).get('/api/v1/apps?app_type=clickhouse_warehouse&limit=100');
    expect(unchanged.body.data).toHaveLength(before.body.data.length);

    const created = await create({ config: config(), credentials: { password: PASSWORD } });
    expect(created.status).toBe(201);
    expect(created.body.data).toMatchObject({
      appType: 'clickhouse_warehouse',
      state: 'active',
      role: ['warehouse'],
      config: config(),
      credentials: { password: '**********' },
    });
    expect(JSON.stringify(created.body)).not.toContain(PASSWORD);

    const tested = await testConnection(created.body.data.id);
    expect([tested.status, tested.body]).toEqual([200, { data: { ok: true, schemaCreated: false } }]);
  });

  it('is a customer warehouse of engine clickhouse, its database the schema, its password sealed', async () => {
    const created = await create({
      config: config({ database: 'account_tables' }),
      credentials: { password: PASSWORD },
    });
    expect(created.status).toBe(201);
    const appId = created.body.data.id as string;
    const row = await rowOf(appId);
    expect(row).toMatchObject({
      name: `app-${appId}`,
      engine: 'clickhouse',
      owner: 'customer',
      account_id: t.accountId,
      app_id: appId,
      schema: 'account_tables',
      host: 'ch.example.com',
      port: server.current.port,
      database: 'account_tables',
      user: 'loader',
      tls_mode: 'disable',
    });
    expect(String(row?.password_ciphertext)).not.toContain(PASSWORD);
    const resolved = h.services.warehouses.connectionOf(await h.services.warehouses.find(String(row?.id)));
    expect(resolved).toMatchObject({ engine: 'clickhouse', owner: 'customer', password: PASSWORD });
  });

  it('refuses to delete the app while the account is placed on it, else removes the row', async () => {
    const tenant = await h.tenant();
    const created = await create({ config: config(), credentials: { password: PASSWORD } }, tenant.key);
    const appId = created.body.data.id as string;
    const { id } = (await rowOf(appId)) as { id: string };
    const placement = await h.services.placements.place(tenant.accountId, id);
    expect(placement).toMatchObject({ warehouseId: id, engine: 'clickhouse', schema: 'pipeline_ch' });

    const deleted = await h.as(tenant.key).delete(`/api/v1/apps/${appId}`);
    expect([deleted.status, deleted.body.code]).toEqual([409, 'warehouse_app_in_use']);
    const deactivated = await h.as(tenant.key).patch(`/api/v1/apps/${appId}`).send({ credentials: null });
    expect([deactivated.status, deactivated.body.code]).toEqual([409, 'warehouse_app_in_use']);
    expect(await rowOf(appId)).toMatchObject({ id });

    await h.services.placements.place(tenant.accountId, 'default');
    const removed = await h.as(tenant.key).delete(`/api/v1/apps/${appId}`);
    expect([removed.status, removed.body.data.state]).toEqual([200, 'deleted']);
    expect(await rowOf(appId)).toBeUndefined();
  });

  it('checks a changed connection before saving it; a new host needs the password again', async () => {
    const created = await create({ config: config(), credentials: { password: PASSWORD } });
    const id = created.body.data.id as string;
    const moved = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: config({ host: 'internal.example.com' }) });
    expect([moved.status, moved.body.code]).toEqual([422, 'secret_required_for_new_host']);
    const refused = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: config({ host: 'internal.example.com' }), credentials: { password: PASSWORD } });
    expect([refused.status, refused.body.code]).toEqual([422, 'egress_address_refused']);
    const wrong = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ credentials: { password: WRONG } });
    expect([wrong.status, wrong.body.code]).toEqual([422, 'warehouse_login_failed']);
    const tls = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: config({ tlsMode: 'require' }) });
    expect([tls.status, tls.body.code]).toEqual([422, 'warehouse_tls_failed']);

    const renamed = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: config({ database: 'renamed' }) });
    expect(renamed.status).toBe(200);
    expect((await rowOf(id))?.schema).toBe('renamed');
    expect((await testConnection(id)).status).toBe(200);
  });

  it.each([
    ['a database name that needs quoting', { database: 'a-b' }, 'body.config.database'],
    ['the server’s own database', { database: 'system' }, 'body.config.database'],
    ['a URL as host', { host: 'https://ch.example.com' }, 'body.config.host'],
    ['a port in the host', { host: 'ch.example.com:8443' }, 'body.config.host'],
    ['a field it does not name', { schema: 'pipeline' }, 'body.config.schema'],
  ])('refuses %s before connecting', async (_label, fields, path) => {
    const response = await create({ config: config(fields), credentials: { password: PASSWORD } });
    expect([response.status, response.body.code]).toEqual([422, 'invalid_app_settings']);
    expect(response.body.errors.map((e: { path: string }) => e.path)).toContain(path);
  });
});

describe('a customer’s ClickHouse on an internal address (no private ranges allowed)', () => {
  let h: Harness;
  let t: Tenant;
  let listener: Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((ready) => listener.listen(0, '127.0.0.1', ready));
    port = (listener.address() as { port: number }).port;
    h = await startHarness('clickhouse warehouse egress', { egress: { resolve } });
    t = await h.tenant();
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await new Promise<void>((closed) => listener.close(() => closed()));
  });

  it.each(['127.0.0.1', 'localhost', '::1', '169.254.169.254', 'internal.example.com'])(
    'refuses %s with 422 egress_address_refused, and nothing reaches the listener',
    async (host) => {
      for (const tlsMode of ['disable', 'verify-full']) {
        const response = await h
          .as(t.key)
          .post('/api/v1/apps')
          .send({
            appType: 'clickhouse_warehouse',
            displayName: `ch ${Math.random()}`,
            config: { host, port, database: 'pipeline', user: 'loader', tlsMode },
            credentials: { password: PASSWORD },
          });
        expect([host, tlsMode, response.status, response.body.code]).toEqual([
          host,
          tlsMode,
          422,
          'egress_address_refused',
        ]);
      }
      expect(connections).toBe(0);
    },
  );
});
