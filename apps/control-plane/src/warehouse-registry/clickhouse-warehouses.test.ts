import request from 'supertest';
import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { defaultWarehouseTimeouts, WarehouseEngines } from '@pipeline/destinations';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness } from '../testing/harness';
import { runOperatorCli, type CliOptions } from '../cli/operator-cli';

const OPERATOR_TOKEN = 'operator-token-for-tests-0123456789abcdef';
const CH_PASSWORD = 'ch-Secret-pw-0c41e7';

const operator = (h: Harness) => ({
  get: (path: string) => request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  post: (path: string) => request(h.operatorApp).post(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  patch: (path: string) =>
    request(h.operatorApp).patch(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
});

const clickhouse = (over: Record<string, unknown> = {}) => ({
  name: 'ch-1',
  engine: 'clickhouse',
  host: 'clickhouse-1.internal',
  database: 'analytics',
  user: 'loader',
  password: CH_PASSWORD,
  tlsMode: 'disable',
  ...over,
});

async function cliOf(
  h: Harness,
  argv: string[],
  options: CliOptions = { credentialKeys: TEST_CREDENTIAL_KEYS },
) {
  let out = '';
  let err = '';
  const code = await runOperatorCli(
    argv,
    h.db.dataSource,
    { out: (t) => (out += t), err: (t) => (err += t) },
    options,
  );
  return { code, out, err, json: () => JSON.parse(out) as Record<string, unknown> };
}

describe('ClickHouse warehouses in the registry (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('clickhouse warehouses', { operatorToken: OPERATOR_TOKEN });
  });
  afterAll(() => h.close());

  it('adds one over the operator API with its engine and default ports, the password sealed', async () => {
    const plain = await operator(h).post('/api/v1/operator/warehouses').send(clickhouse());
    expect(plain.status).toBe(201);
    expect(plain.body.data).toMatchObject({
      name: 'ch-1',
      engine: 'clickhouse',
      owner: 'platform',
      host: 'clickhouse-1.internal',
      port: 8123,
      database: 'analytics',
      user: 'loader',
      password: '**********',
      tlsMode: 'disable',
      maxConnections: 10,
      isDefault: false,
    });
    const tls = await operator(h)
      .post('/api/v1/operator/warehouses')
      .send(clickhouse({ name: 'ch-tls', tlsMode: 'verify-full' }));
    expect([tls.status, tls.body.data.port, tls.body.data.tlsMode]).toEqual([201, 8443, 'verify-full']);
    const given = await operator(h)
      .post('/api/v1/operator/warehouses')
      .send(clickhouse({ name: 'ch-port', port: 9000 }));
    expect([given.status, given.body.data.port]).toEqual([201, 9000]);
    // PostgreSQL stays the default engine, and its port 5432.
    const pg = await operator(h).post('/api/v1/operator/warehouses').send({
      name: 'pg-2',
      host: 'pg-2.internal',
      database: 'wh-2',
      user: 'loader',
      password: 'pg-Secret-2',
      tlsMode: 'require',
    });
    expect([pg.status, pg.body.data.engine, pg.body.data.port]).toEqual([201, 'postgres', 5432]);

    const entity = await h.services.warehouses.find('ch-1');
    expect(entity.engine).toBe('clickhouse');
    expect(entity.passwordCiphertext).not.toContain(CH_PASSWORD);
    expect(h.services.warehouses.connectionOf(entity)).toEqual({
      warehouseId: entity.id,
      engine: 'clickhouse',
      host: 'clickhouse-1.internal',
      port: 8123,
      database: 'analytics',
      user: 'loader',
      password: CH_PASSWORD,
      tlsMode: 'disable',
      owner: 'platform',
      maxConnections: 10,
    });

    const listed = await operator(h).get('/api/v1/operator/warehouses');
    expect((listed.body.data as { name: string; engine: string }[]).map((w) => [w.name, w.engine])).toEqual([
      ['default', 'postgres'],
      ['ch-1', 'clickhouse'],
      ['ch-tls', 'clickhouse'],
      ['ch-port', 'clickhouse'],
      ['pg-2', 'postgres'],
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(CH_PASSWORD);
    expect(JSON.stringify(h.logs)).not.toContain(CH_PASSWORD);
  });

  it('validates the fields by the engine', async () => {
    const problemsOf = async (body: Record<string, unknown>) => {
      const answer = await operator(h).post('/api/v1/operator/warehouses').send(body);
      return [answer.status, answer.body.code, answer.body.errors];
    };
    // The API's schema refuses an engine it does not list.
    const [status, code] = await problemsOf(clickhouse({ name: 'ch-odd', engine: 'mysql' }));
    expect([status, code]).toEqual([400, 'validation_failed']);
    // A ClickHouse database is a plain name; PostgreSQL takes any 63 bytes.
    expect(await problemsOf(clickhouse({ name: 'ch-dash', database: 'wh-2' }))).toEqual([
      400,
      'validation_failed',
      [
        {
          path: 'body.database',
          message: 'a ClickHouse database name: letters, digits and _, 1 to 63, not starting with a digit',
        },
      ],
    ]);
    // The API's schema holds every engine to 63 characters before the registry's rules.
    expect(await problemsOf(clickhouse({ name: 'ch-long', database: 'd'.repeat(64) }))).toEqual([
      400,
      'validation_failed',
      [{ path: 'body.database', message: 'maxLength 63' }],
    ]);
    expect((await problemsOf(clickhouse({ name: 'ch-63', database: `d${'_'.repeat(62)}` })))[0]).toBe(201);
  });

  it('keeps the engine through an update; only the connection changes', async () => {
    const updated = await operator(h)
      .patch('/api/v1/operator/warehouses/ch-port')
      .send({ host: 'clickhouse-2.internal', port: 8124, password: 'ch-port-entered-again' });
    expect(updated.status).toBe(200);
    expect(updated.body.data).toMatchObject({
      engine: 'clickhouse',
      host: 'clickhouse-2.internal',
      port: 8124,
    });
    const refused = await operator(h)
      .patch('/api/v1/operator/warehouses/ch-port')
      .send({ database: 'has-dash' });
    expect([refused.status, refused.body.errors]).toEqual([
      400,
      [
        {
          path: 'body.database',
          message: 'a ClickHouse database name: letters, digits and _, 1 to 63, not starting with a digit',
        },
      ],
    ]);
  });

  it('adds one with the CLI, the port by engine and TLS, and lists its engine', async () => {
    const add = (name: string, extra: string[]) =>
      cliOf(
        h,
        [
          'warehouses',
          'add',
          '--name',
          name,
          '--engine',
          'clickhouse',
          '--host',
          'ch-cli.internal',
          '--database',
          'analytics',
          '--user',
          'loader',
          '--password-env',
          'CH_PASSWORD',
          ...extra,
        ],
        { credentialKeys: TEST_CREDENTIAL_KEYS, env: { CH_PASSWORD } },
      );
    const http = await add('ch-cli', ['--tls-mode', 'disable', '--json']);
    expect(http.code).toBe(0);
    expect(http.json()).toMatchObject({ engine: 'clickhouse', port: 8123, tlsMode: 'disable' });
    const https = await add('ch-cli-tls', []);
    expect(https.code).toBe(0);
    expect(https.out).toBe(
      `warehouse ${(await h.services.warehouses.find('ch-cli-tls')).id} "ch-cli-tls" clickhouse loader@ch-cli.internal:8443/analytics`,
    );
    const odd = await add('ch-cli-odd', ['--engine', 'oracle']);
    expect([odd.code, odd.err]).toEqual([1, 'error: The request is not valid (validation_failed)\n']);
    const listed = await cliOf(h, ['warehouses', 'list']);
    expect(listed.out).toContain(`ch-cli-tls  clickhouse  loader@ch-cli.internal:8443/analytics`);
  });

  it('queues a move between engines, in the API and the CLI, as between two PostgreSQL warehouses', async () => {
    const ch = await h.services.warehouses.find('ch-1');
    const tenant = await h.tenant();
    const api = await operator(h)
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: tenant.accountId, toWarehouse: 'ch-1' });
    expect([api.status, api.body.data.stage, api.body.data.toWarehouseId]).toEqual([202, 'queued', ch.id]);
    const other = await h.tenant();
    const cli = await cliOf(h, ['warehouses', 'move', other.accountId, '--to', 'ch-1', '--json']);
    expect([cli.code, cli.err]).toEqual([0, '']);
    expect(cli.json()).toMatchObject({ accountId: other.accountId, toWarehouseId: ch.id, stage: 'queued' });
    const jobs = (await h.db.dataSource.query(
      "SELECT count(*)::int AS n FROM jobs WHERE account_id = ANY($1) AND kind = 'warehouse_move'",
      [[tenant.accountId, other.accountId]],
    )) as { n: number }[];
    expect(jobs[0]?.n).toBe(2);
  });
});

describe('the default warehouse from a ClickHouse WAREHOUSE_URL (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('clickhouse default', {
      operatorToken: OPERATOR_TOKEN,
      warehouseUrl: `clickhouses://loader:${encodeURIComponent(CH_PASSWORD)}@ch.example.com/analytics`,
    });
  });
  afterAll(() => h.close());

  it('is created as a ClickHouse warehouse, stored as its parts, and new accounts are placed on it', async () => {
    const tenant = await h.tenant();
    const entity = await h.services.warehouses.find('default');
    expect(h.services.warehouses.connectionOf(entity)).toEqual({
      warehouseId: entity.id,
      engine: 'clickhouse',
      host: 'ch.example.com',
      port: 8443,
      database: 'analytics',
      user: 'loader',
      password: CH_PASSWORD,
      tlsMode: 'verify-full',
      owner: 'platform',
      maxConnections: 10,
    });
    const placement = await h.services.placements.resolve(tenant.accountId);
    expect(placement.placement).toEqual({
      warehouseId: entity.id,
      engine: 'clickhouse',
      schema: `account_${tenant.accountId.replace(/-/g, '')}`,
      epoch: 1,
    });
  });
});

describe('checks of a ClickHouse warehouse (real ClickHouse test server, real PostgreSQL)', () => {
  const user = 'loader';
  const password = 'ch-Check-pw-5d20';
  let server: ClickHouseTestServer;
  let engines: WarehouseEngines;
  let h: Harness;
  beforeAll(async () => {
    server = await startClickHouseTestServer({ user, password });
    engines = WarehouseEngines.open(
      { processMaxConnections: 6, idleMs: 5000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    h = await startHarness('clickhouse checks', {
      operatorToken: OPERATOR_TOKEN,
      engineFor: (connection) => engines.for(connection),
    });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
    await engines?.close();
    await server?.destroy();
  });

  const add = async (name: string, over: Record<string, unknown> = {}) => {
    const answer = await operator(h)
      .post('/api/v1/operator/warehouses')
      .send(
        clickhouse({
          name,
          host: server.host,
          port: server.port,
          database: 'default',
          user,
          password,
          ...over,
        }),
      );
    expect(answer.status).toBe(201);
  };
  const check = async (name: string) => {
    const answer = await operator(h).post(`/api/v1/operator/warehouses/${name}/check`);
    expect(answer.status).toBe(200);
    return answer.body.data as { engine: string; status: string; statusDetail: string | null };
  };

  it('records active for a server that answers, through the ClickHouse engine', async () => {
    await add('ch-live');
    expect(await check('ch-live')).toMatchObject({
      engine: 'clickhouse',
      status: 'active',
      statusDetail: null,
    });
    const listed = await operator(h).get('/api/v1/operator/warehouses/ch-live');
    // Nothing placed on it yet: its size is known and zero.
    expect(listed.body.data).toMatchObject({ engine: 'clickhouse', accounts: 0, sizeBytes: 0 });
  });

  it("records misconfigured for a refused login and unavailable for a closed port, by ClickHouse's verdict", async () => {
    await add('ch-wrong-password', { password: 'not-the-password' });
    await add('ch-closed', { port: 1 });
    const refused = await check('ch-wrong-password');
    expect(refused.status).toBe('misconfigured');
    expect(refused.statusDetail).toMatch(/^probe failed \(misconfigured\): /);
    expect(refused.statusDetail).not.toContain(password);
    const closed = await check('ch-closed');
    expect(closed.status).toBe('unavailable');
    expect(closed.statusDetail).toMatch(/^probe failed \(unavailable\): /);
    // Fixed, the next check records active again.
    const fixed = await operator(h).patch('/api/v1/operator/warehouses/ch-wrong-password').send({ password });
    expect(fixed.status).toBe(200);
    expect(await check('ch-wrong-password')).toMatchObject({ status: 'active', statusDetail: null });
    const metrics = (await request(h.app).get('/metrics')).text;
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="ch-closed",status="unavailable"} 1');
    expect(metrics).toContain('pipeline_warehouse_status{warehouse="ch-live",status="active"} 1');
  });

  it('checks it with the CLI too', async () => {
    const answer = await cliOf(h, ['warehouses', 'check', 'ch-live'], {
      credentialKeys: TEST_CREDENTIAL_KEYS,
      engineFor: (connection) => engines.for(connection),
    });
    expect([answer.code, answer.out]).toEqual([
      0,
      `warehouse ${(await h.services.warehouses.find('ch-live')).id} "ch-live" active`,
    ]);
  });
});
