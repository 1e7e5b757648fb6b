import request from 'supertest';
import { useClickHouseTestServer } from '@pipeline/clickhouse/testing';
import {
  startHarness,
  TEST_INTERNAL_TOKEN,
  TEST_WAREHOUSE_TOKEN,
  testDeliveryToken,
  type Harness,
} from '../testing/harness';

const OPERATOR_TOKEN = 'secrets-operator-token-0123456789abcdef';
const DEFAULT_WAREHOUSE_PASSWORD = 'WH-default-pw-3c1b0a';

// Regression test: whatever a client does, no API response (the internal lookups aside, which
// exist to hand credentials to a delivery consumer) and no log line carries an app credential,
// an API key, a write key or a warehouse password in clear.
describe('secrets never leak (real PostgreSQL)', () => {
  let h: Harness;
  const responses: string[] = [];
  const secrets: string[] = [];
  const record = (response: request.Response) => {
    responses.push(JSON.stringify(response.body) + JSON.stringify(response.headers));
    return response;
  };

  beforeAll(async () => {
    h = await startHarness('secrets', {
      operatorToken: OPERATOR_TOKEN,
      warehouseUrl: `postgres://loader:${DEFAULT_WAREHOUSE_PASSWORD}@127.0.0.1:1/warehouse`,
    });
  });
  afterAll(() => h.close());

  it('holds across every endpoint, error path and log line', async () => {
    const t = await h.tenant();
    secrets.push(t.key);
    const credential = 'CRED-sk_live_9f8e7d6c5b4a';
    const configSecret = 'CFG-password-77';
    secrets.push(credential, configSecret);
    const as = h.as(t.key);

    // Refused (fields the app type does not have): the 422 names them, never their values.
    const refused = record(
      await as.post('/api/v1/apps').send({
        appType: 'amplitude',
        displayName: 'Amp',
        credentials: { apiKey: credential, nested: { secret: credential } },
        config: { password: configSecret, region: 'eu' },
      }),
    );
    expect(refused.status).toBe(422);
    const app = record(
      await as.post('/api/v1/apps').send({
        appType: 'amplitude',
        displayName: 'Amp',
        credentials: { apiKey: credential },
        config: { region: 'eu' },
      }),
    ).body.data;
    const web = record(await as.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Web' }))
      .body.data;
    record(await as.get('/api/v1/apps'));
    record(await as.get(`/api/v1/apps/${app.id}`));
    record(
      await as
        .patch(`/api/v1/apps/${app.id}`)
        .send({ credentials: { apiKey: credential }, config: { region: 'eu' } }),
    );
    record(
      await as
        .patch(`/api/v1/apps/${app.id}`)
        .send({ credentials: { apiKey: credential }, bogus: credential }),
    );
    record(
      await as
        .post('/api/v1/apps')
        .send({ appType: 'nope', displayName: 'x', credentials: { apiKey: credential } }),
    );
    record(
      await as
        .post('/api/v1/apps')
        .send({ appType: 'amplitude', displayName: 'Amp', credentials: { apiKey: 42, token: credential } }),
    );
    record(
      await as
        .post('/api/v1/apps')
        .set('Content-Type', 'application/json')
        .send(`{"credentials":{"apiKey":"${credential}"`),
    );

    const integration = record(
      await as.post('/api/v1/integrations').send({
        sourceAppId: web.id,
        destinationAppId: app.id,
        dataType: 'events',
        config: { global: { apiToken: configSecret }, tasks: [{ task_type: 'events' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
      }),
    ).body.data;
    record(await as.get(`/api/v1/integrations/${integration.id}`));
    record(await as.get('/api/v1/integrations'));

    const writeKey = await as.post('/api/v1/write-keys').send({ name: 'site' });
    const key = writeKey.body.data.key as string;
    secrets.push(key);
    record(await as.get('/api/v1/write-keys'));
    record(await as.get(`/api/v1/write-keys/${writeKey.body.data.id}`));
    record(
      await as.patch(`/api/v1/write-keys/${writeKey.body.data.id}`).send({ allowedOrigins: ['example.com'] }),
    );

    const resolved = await request(h.app)
      .post('/internal/v1/write-keys/resolve')
      .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
      .send({ writeKey: key });
    // Ingestion's resolution names the destination but never carries its credentials ...
    expect(resolved.body.data.destinations[0].appType).toBeDefined();
    record(resolved);
    // ... only the amplitude consumer's lookup does: its purpose.
    const lookedUp = await request(h.app)
      .post('/internal/v1/write-keys/lookup')
      .set('Authorization', `Bearer ${testDeliveryToken('amplitude')}`)
      .send({ writeKeyId: writeKey.body.data.id });
    expect(lookedUp.body.data.destinations[0].credentials.apiKey).toBe(credential);
    record(
      await request(h.app)
        .post('/internal/v1/write-keys/resolve')
        .set('Authorization', `Bearer ${t.key}`)
        .send({ writeKey: key }),
    );
    record(await request(h.app).get('/api/v1/apps').set('Authorization', `Bearer ${key}`));
    record(await h.as(`${t.key}x`).get('/api/v1/apps'));
    record(await as.delete(`/api/v1/apps/${app.id}`));

    // Warehouse passwords: written by operators, handed to the warehouse consumer only.
    const warehousePassword = 'WH-second-pw-8d7e6f';
    secrets.push(DEFAULT_WAREHOUSE_PASSWORD, warehousePassword);
    const operator = (test: request.Test) => test.set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
    const warehouse = {
      name: 'second',
      host: 'wh2.internal',
      port: 5432,
      database: 'wh2',
      user: 'u2',
      password: warehousePassword,
      tlsMode: 'require',
    };
    record(
      await operator(request(h.operatorApp).post('/api/v1/operator/warehouses')).send({
        ...warehouse,
        port: 0,
      }),
    );
    record(
      await operator(request(h.operatorApp).post('/api/v1/operator/warehouses')).send({
        ...warehouse,
        bogus: 1,
      }),
    );
    const created = record(
      await operator(request(h.operatorApp).post('/api/v1/operator/warehouses')).send(warehouse),
    );
    expect(created.status).toBe(201);
    record(await operator(request(h.operatorApp).post('/api/v1/operator/warehouses')).send(warehouse));
    record(await operator(request(h.operatorApp).get('/api/v1/operator/warehouses')));
    record(await operator(request(h.operatorApp).get('/api/v1/operator/warehouses/default')));
    record(await operator(request(h.operatorApp).post('/api/v1/operator/warehouses/second/default')));
    record(await operator(request(h.operatorApp).get('/api/v1/operator/warehouses/default/accounts')));
    record(await operator(request(h.operatorApp).post('/api/v1/operator/warehouses/default/default')));
    record(await h.as(t.key).get('/api/v1/operator/warehouses'));
    record(
      await request(h.app)
        .post('/internal/v1/write-keys/resolve')
        .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
        .send({ writeKey: key }),
    );
    record(
      await request(h.app)
        .post('/internal/v1/warehouses/resolve')
        .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
        .send({ accountId: t.accountId }),
    );
    // ... only the warehouse consumer's resolution carries one: its purpose.
    const placed = await request(h.app)
      .post('/internal/v1/warehouses/resolve')
      .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
      .send({ accountId: t.accountId });
    expect(placed.body.data.connection.password).toBe(DEFAULT_WAREHOUSE_PASSWORD);

    await new Promise((resolve) => setImmediate(resolve));
    expect(h.logs.length).toBeGreaterThan(10);
    for (const secret of secrets) {
      expect(responses.filter((r) => r.includes(secret))).toEqual([]);
      expect(h.logs.filter((line) => line.includes(secret))).toEqual([]);
    }
  });
});

// The same for a customer's own ClickHouse (a clickhouse_warehouse app): its password is an app
// credential on the way in and a warehouse password once the app is a warehouse, and neither an
// answer nor a log line carries it, refusals, tests and the operator's views included.
describe('a ClickHouse warehouse app’s password never leaks (real ClickHouse engine, real PostgreSQL)', () => {
  const CLICKHOUSE_PASSWORD = 'CH-app-pw-6e5d4c3b2a';
  const WRONG_PASSWORD = 'CH-wrong-pw-1a2b3c4d5e';
  const server = useClickHouseTestServer({ user: 'loader', password: CLICKHOUSE_PASSWORD });
  let h: Harness;
  const responses: string[] = [];
  const record = (response: request.Response) => {
    responses.push(JSON.stringify(response.body) + JSON.stringify(response.headers));
    return response;
  };
  const operator = (req: request.Test) => req.set('Authorization', `Bearer ${OPERATOR_TOKEN}`);

  beforeAll(async () => {
    h = await startHarness('secrets clickhouse', {
      operatorToken: OPERATOR_TOKEN,
      egress: {
        allowPrivateRanges: ['127.0.0.0/8'],
        resolve: async (name) =>
          name === 'ch.example.com' ? ['127.0.0.1'] : Promise.reject(new Error(`ENOTFOUND ${name}`)),
      },
    });
  }, 60_000);
  afterAll(() => h.close());

  it('holds across create, refusals, tests, edits, the registry and deletion', async () => {
    const t = await h.tenant();
    const as = h.as(t.key);
    const config = {
      host: 'ch.example.com',
      port: server.current.port,
      database: 'pipeline',
      user: 'loader',
      tlsMode: 'disable',
    };
    const body = (password: string) => ({
      appType: 'clickhouse_warehouse',
      displayName: 'Our ClickHouse',
      config,
      credentials: { password },
    });

    expect(record(await as.post('/api/v1/apps').send(body(WRONG_PASSWORD))).status).toBe(422);
    expect(
      record(
        await as
          .post('/api/v1/apps')
          .send({ ...body(CLICKHOUSE_PASSWORD), config: { ...config, password: CLICKHOUSE_PASSWORD } }),
      ).status,
    ).toBe(422);
    const created = record(await as.post('/api/v1/apps').send(body(CLICKHOUSE_PASSWORD)));
    expect(created.status).toBe(201);
    const appId = created.body.data.id as string;
    record(await as.get('/api/v1/apps?app_type=clickhouse_warehouse'));
    record(await as.get(`/api/v1/apps/${appId}`));
    expect(record(await as.post(`/api/v1/apps/${appId}/test-connection`).send()).status).toBe(200);
    expect(
      record(await as.patch(`/api/v1/apps/${appId}`).send({ credentials: { password: WRONG_PASSWORD } }))
        .status,
    ).toBe(422);
    expect(
      record(await as.patch(`/api/v1/apps/${appId}`).send({ credentials: { password: CLICKHOUSE_PASSWORD } }))
        .status,
    ).toBe(200);

    const warehouses = record(await operator(request(h.operatorApp).get('/api/v1/operator/warehouses')));
    const row = (warehouses.body.data as { id: string; appId: string | null; engine: string }[]).find(
      (w) => w.appId === appId,
    );
    expect(row?.engine).toBe('clickhouse');
    record(await operator(request(h.operatorApp).get(`/api/v1/operator/warehouses/${row?.id}`)));
    await h.services.placements.place(t.accountId, String(row?.id));
    record(await as.get('/api/v1/warehouse'));
    record(
      await request(h.app)
        .post('/internal/v1/warehouses/resolve')
        .set('Authorization', `Bearer ${TEST_INTERNAL_TOKEN}`)
        .send({ accountId: t.accountId }),
    );
    // ... only the warehouse consumer's resolution carries it: its purpose.
    const placed = await request(h.app)
      .post('/internal/v1/warehouses/resolve')
      .set('Authorization', `Bearer ${TEST_WAREHOUSE_TOKEN}`)
      .send({ accountId: t.accountId });
    expect(placed.body.data.connection).toMatchObject({
      engine: 'clickhouse',
      password: CLICKHOUSE_PASSWORD,
    });
    expect(record(await as.delete(`/api/v1/apps/${appId}`)).status).toBe(409);

    await new Promise((resolve) => setImmediate(resolve));
    expect(h.logs.length).toBeGreaterThan(5);
    for (const secret of [CLICKHOUSE_PASSWORD, WRONG_PASSWORD]) {
      expect(responses.filter((r) => r.includes(secret))).toEqual([]);
      expect(h.logs.filter((line) => line.includes(secret))).toEqual([]);
    }
  }, 30_000);
});
