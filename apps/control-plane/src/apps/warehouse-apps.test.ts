import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

// A customer's own PostgreSQL as an app: saved only once it answers through the egress guard,
// tested again on demand, and never an echo of its password. The customer's server is an
// extra PostgreSQL cluster on loopback, reached by a name the harness's resolver answers;
// loopback is allowed here the way EGRESS_ALLOW_PRIVATE_RANGES allows a self-hosted network.

const PASSWORD = 'Loader-Pa55-never-echoed-8d1';
const dns: Record<string, string[]> = {
  'wh.example.com': ['127.0.0.1'],
  'internal.example.com': ['10.0.0.5'],
  'metadata.example.com': ['93.184.215.21', '169.254.169.254'],
};

const clusters = useTestClusters();

describe('customer-owned PostgreSQL warehouse apps (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let cluster: TestCluster;

  const config = (fields: Record<string, unknown> = {}) => ({
    host: 'wh.example.com',
    port: cluster.port,
    database: 'analytics',
    user: 'loader',
    tlsMode: 'disable',
    ...fields,
  });
  const create = (body: { config: object; credentials?: object; displayName?: string }) =>
    h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType: 'postgres_warehouse', displayName: `wh ${Math.random()}`, ...body });
  const testConnection = (id: string, key = t.key) =>
    h.as(key).post(`/api/v1/apps/${id}/test-connection`).send();
  const schemas = async () =>
    (
      await cluster.query<{ nspname: string }>(
        "SELECT nspname FROM pg_namespace WHERE nspname IN ('pipeline', 'custom') ORDER BY 1",
        [],
        'analytics',
      )
    ).map((r) => r.nspname);

  beforeAll(async () => {
    cluster = await clusters.start('customer warehouse', { passwordLogins: true });
    await cluster.query(`CREATE ROLE loader LOGIN PASSWORD '${PASSWORD}'`);
    await cluster.createDatabase('analytics');
    await cluster.query('GRANT CONNECT, CREATE ON DATABASE analytics TO loader');
    h = await startHarness('warehouse apps', {
      egress: {
        allowPrivateRanges: ['127.0.0.0/8'],
        resolve: async (name) => dns[name] ?? Promise.reject(new Error(`ENOTFOUND ${name}`)),
      },
    });
    t = await h.tenant();
  }, 60_000);
  afterAll(() => h.close());

  /** No answer and no log line holds the password. */
  afterEach(() => {
    expect(h.logs.join('')).not.toContain(PASSWORD);
  });

  it('saves a warehouse that answers, creating its schema, and never returns the password', async () => {
    const response = await create({ config: config(), credentials: { password: PASSWORD } });
    expect(response.status).toBe(201);
    expect(response.body.data).toMatchObject({
      appType: 'postgres_warehouse',
      state: 'active',
      role: ['warehouse'],
      config: config(),
      credentials: { password: '**********' },
    });
    expect(JSON.stringify(response.body)).not.toContain(PASSWORD);
    expect(await schemas()).toEqual(['pipeline']);

    const tested = await testConnection(response.body.data.id);
    expect([tested.status, tested.body]).toEqual([200, { data: { ok: true, schemaCreated: false } }]);
  });

  it('creates the schema the config names', async () => {
    const response = await create({
      config: config({ schema: 'custom' }),
      credentials: { password: PASSWORD },
    });
    expect(response.status).toBe(201);
    expect(await schemas()).toEqual(['custom', 'pipeline']);
  });

  it.each([
    ['a wrong password', {}, 'Wrong-Pa55-also-secret', 'warehouse_login_failed'],
    ['a missing database', { database: 'nope' }, PASSWORD, 'warehouse_database_missing'],
    [
      'a name resolving to a private address',
      { host: 'internal.example.com' },
      PASSWORD,
      'egress_address_refused',
    ],
    [
      'a name with a link-local address',
      { host: 'metadata.example.com' },
      PASSWORD,
      'egress_address_refused',
    ],
    [
      'a private address (refused before any packet)',
      { host: '10.1.2.3', port: 5432 },
      PASSWORD,
      'egress_address_refused',
    ],
    ['a link-local address', { host: '169.254.169.254', port: 5432 }, PASSWORD, 'egress_address_refused'],
    ['a name that does not resolve', { host: 'nx.example.com' }, PASSWORD, 'warehouse_connection_refused'],
    ['TLS the server does not offer', { tlsMode: 'require' }, PASSWORD, 'warehouse_tls_failed'],
  ])('refuses to save %s, with its code', async (_label, fields, password, code) => {
    const before = await h.as(t.key).get('/api/v1/apps?app_type=postgres_warehouse&limit=100');
    const response = await create({ config: config(fields), credentials: { password } });
    expect([response.status, response.body.code]).toEqual([422, code]);
    expect(response.body.errors).toEqual([{ path: 'body.config', message: expect.any(String) }]);
    expect(JSON.stringify(response.body)).not.toContain(password);
    expect(JSON.stringify(response.body)).not.toContain('loader');
    const after = await h.as(t.key).get('/api/v1/apps?app_type=postgres_warehouse&limit=100');
    expect(after.body.data).toHaveLength(before.body.data.length);
  });

  it.each([
    ['a socket path', '/var/run/postgresql'],
    ['a host list', 'wh.example.com,internal.example.com'],
    ['libpq parameters', 'wh.example.com sslmode=disable'],
    ['an option', '-c'],
    ['a URL', 'postgres://wh.example.com/analytics'],
    ['a control character', 'wh.example.com\n'],
    ['an absurd length', `${'a'.repeat(60)}.`.repeat(10) + 'com'],
  ])('refuses %s as a host before connecting', async (_label, host) => {
    const response = await create({ config: config({ host }), credentials: { password: PASSWORD } });
    expect([response.status, response.body.code]).toEqual([422, 'invalid_app_settings']);
    expect(response.body.errors.map((e: { path: string }) => e.path)).toContain('body.config.host');
  });

  it('tests the connection on demand: down, back up, and only with apps.write', async () => {
    const created = await create({ config: config(), credentials: { password: PASSWORD } });
    const id = created.body.data.id as string;
    await cluster.stop();
    const down = await testConnection(id);
    expect([down.status, down.body.code]).toEqual([422, 'warehouse_connection_refused']);
    await cluster.start();
    expect((await testConnection(id)).status).toBe(200);

    const reader = await t.keyWith(['apps.read']);
    expect((await testConnection(id, reader)).status).toBe(403);
    expect((await testConnection('00000000-0000-4000-8000-000000000000')).status).toBe(404);
  }, 30_000);

  it('answers apps without a connection test, and drafts without a password, with their codes', async () => {
    const draft = await create({ config: config() });
    expect([draft.status, draft.body.data.state]).toEqual([201, 'inactive']);
    const noPassword = await testConnection(draft.body.data.id);
    expect([noPassword.status, noPassword.body.code]).toEqual([422, 'credentials_required']);

    const hook = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType: 'webhook', displayName: 'hook', credentials: { signingSecret: 'whsec-1' } });
    const unsupported = await testConnection(hook.body.data.id);
    expect([unsupported.status, unsupported.body.code]).toEqual([422, 'connection_test_not_supported']);

    await h.as(t.key).delete(`/api/v1/apps/${draft.body.data.id}`);
    expect((await testConnection(draft.body.data.id)).status).toBe(409);
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

    const wrongPassword = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ credentials: { password: 'Another-wrong-secret-1' } });
    expect([wrongPassword.status, wrongPassword.body.code]).toEqual([422, 'warehouse_login_failed']);

    const renamed = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: config({ schema: 'custom' }) });
    expect(renamed.status).toBe(200);
    const stored = await h.as(t.key).get(`/api/v1/apps/${id}`);
    expect(stored.body.data.config).toEqual(config({ schema: 'custom' }));
    expect((await testConnection(id)).status).toBe(200);
  });
});
