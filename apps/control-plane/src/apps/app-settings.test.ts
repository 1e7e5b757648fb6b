import { appCatalog, clickhouseWarehouse } from '@pipeline/catalog';
import { useClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

const clusters = useTestClusters();
const clickhouseExample = clickhouseWarehouse.example as {
  config: { host: string; user: string };
  credentials: { password: string };
};
const clickhouse = useClickHouseTestServer({
  user: clickhouseExample.config.user,
  password: clickhouseExample.credentials.password,
});

// Every app type's credentials and config schemas, exercised through POST and PATCH /apps:
// valid input is stored, a missing secret and an unknown field are 422 naming the field, and
// no answer ever carries a secret's value.
describe('app credentials and config are checked against the app type (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  // A customer-owned warehouse is saved only when it answers: its example's server is an extra
  // cluster (PostgreSQL) or the chdb test server (ClickHouse) on loopback (allowed here as
  // EGRESS_ALLOW_PRIVATE_RANGES would), reached by the example's host name, without TLS.
  let warehouse: TestCluster;
  beforeAll(async () => {
    warehouse = await clusters.start('app settings warehouse', { passwordLogins: true });
    const { example } = appCatalog.find((d) => d.warehouse?.engine === 'postgres')!;
    const { config, credentials } = example as {
      config: { host: string; database: string; user: string };
      credentials: { password: string };
    };
    await warehouse.query(`CREATE ROLE ${config.user} LOGIN PASSWORD '${credentials.password}'`);
    await warehouse.createDatabase(config.database);
    await warehouse.query(`GRANT CONNECT, CREATE ON DATABASE ${config.database} TO ${config.user}`);
    h = await startHarness('app settings', {
      egress: {
        allowPrivateRanges: ['127.0.0.0/8'],
        resolve: async (name) =>
          [config.host, clickhouseExample.config.host].includes(name)
            ? ['127.0.0.1']
            : Promise.reject(new Error(`ENOTFOUND ${name}`)),
      },
    });
    t = await h.tenant();
  }, 60_000);
  afterAll(() => h.close());

  const create = (body: object) => h.as(t.key).post('/api/v1/apps').send(body);
  const secretValue = 'sk_live_NEVER_ECHO_9f3a'; // shaped to pass patterns that want a prefix

  const withSecrets = appCatalog.filter((d) => Object.keys(d.example.credentials as object).length > 0);

  describe.each(appCatalog.map((d) => [d.appType, d] as const))('%s', (appType, definition) => {
    const example = definition.example as {
      credentials: Record<string, unknown>;
      config: Record<string, unknown>;
    };

    it('accepts its example and answers it back masked', async () => {
      const port = definition.warehouse?.engine === 'clickhouse' ? clickhouse.current.port : warehouse?.port;
      const config = definition.warehouse ? { ...example.config, port, tlsMode: 'disable' } : example.config;
      const response = await create({ appType, displayName: `${appType} ok`, ...example, config });
      expect(response.status).toBe(201);
      expect(response.body.data.state).toBe('active');
      expect(Object.keys(response.body.data.credentials ?? {})).toEqual(Object.keys(example.credentials));
      for (const value of Object.values(response.body.data.credentials ?? {}))
        expect(value).toBe('**********');
      expect(response.body.data.config).toEqual(config);
    });

    it('refuses an unknown credential and an unknown config field, naming each', async () => {
      const response = await create({
        appType,
        displayName: `${appType} typo`,
        credentials: { ...example.credentials, apiKeyy: secretValue },
        config: { ...example.config, regoin: 'eu' },
      });
      expect(response.status).toBe(422);
      expect(response.body.code).toBe('invalid_app_settings');
      expect(response.body.errors).toEqual([
        { path: 'body.credentials.apiKeyy', message: 'is not a credential of this app type' },
        { path: 'body.config.regoin', message: 'is not a config field of this app type' },
      ]);
      expect(JSON.stringify(response.body)).not.toContain(secretValue);
    });
  });

  describe.each(withSecrets.map((d) => [d.appType, d] as const))('%s secrets', (appType, definition) => {
    const example = definition.example as {
      credentials: Record<string, unknown>;
      config: Record<string, unknown>;
    };
    const credentialFields = (
      ((definition.credentials as { anyOf?: object[] }).anyOf?.[0] ?? definition.credentials) as {
        properties: Record<string, { writeOnly?: boolean; pattern?: string }>;
      }
    ).properties;
    const secretFields = Object.entries(credentialFields)
      .filter(([, field]) => field.writeOnly)
      .map(([name]) => name);

    it('has a secret, and refuses credentials without it', async () => {
      expect(secretFields.length).toBeGreaterThan(0);
      const missing = secretFields[0]!;
      const { [missing]: _dropped, ...rest } = example.credentials;
      const others = Object.keys(rest).length > 0 ? rest : { unrelated: secretValue };
      const response = await create({
        appType,
        displayName: `${appType} no secret`,
        credentials: others,
        config: example.config,
      });
      expect(response.status).toBe(422);
      expect(response.body.code).toBe('invalid_app_settings');
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([
        `body.credentials.${missing}`,
        ...(others === rest ? [] : ['body.credentials.unrelated']),
      ]);
      expect(JSON.stringify(response.body)).not.toContain(secretValue);
    });

    it('never echoes a secret of the wrong shape', async () => {
      const field = secretFields[0]!;
      const wrong = `${secretValue}\n${'x'.repeat(5000)}`;
      const response = await create({
        appType,
        displayName: `${appType} bad secret`,
        credentials: { ...example.credentials, [field]: wrong },
        config: example.config,
      });
      expect(response.status).toBe(422);
      // One error per rule it breaks: its length, and its pattern where it has one.
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual(
        Array(credentialFields[field]!.pattern ? 2 : 1).fill(`body.credentials.${field}`),
      );
      expect(JSON.stringify(response.body)).not.toContain(secretValue);
    });
  });

  it('checks PATCH: a config field of the wrong form is refused, a right one kept', async () => {
    const braze = appCatalog.find((d) => d.appType === 'braze')!;
    const created = await create({ appType: 'braze', displayName: 'Braze patch', ...braze.example });
    const id = created.body.data.id;
    const bad = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: { restEndpoint: 'https://evil.example.com' } });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([
      { path: 'body.config.restEndpoint', message: expect.stringMatching(/must match pattern/) },
    ]);
    // Braze's REST endpoint is where its API key goes: moving it needs the key entered again.
    const moved = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ config: { restEndpoint: 'https://rest.fra-01.braze.eu', appId: 'app-1' } });
    expect([moved.status, moved.body.code]).toEqual([422, 'secret_required_for_new_host']);
    const good = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({
        credentials: braze.example.credentials,
        config: { restEndpoint: 'https://rest.fra-01.braze.eu', appId: 'app-1' },
      });
    expect(good.status).toBe(200);
    expect(good.body.data.config).toEqual({ restEndpoint: 'https://rest.fra-01.braze.eu', appId: 'app-1' });
  });

  it('lets a draft without credentials leave required config for later, but not activate without it', async () => {
    const draft = await create({ appType: 'shopify', displayName: 'Shop draft' });
    expect(draft.status).toBe(201);
    expect(draft.body.data.state).toBe('inactive');
    const id = draft.body.data.id;
    const incomplete = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ credentials: { accessToken: 'shpat_x' } });
    expect(incomplete.status).toBe(422);
    expect(incomplete.body.errors).toEqual([{ path: 'body.config.shop', message: 'is required' }]);
    const complete = await h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ credentials: { accessToken: 'shpat_x' }, config: { shop: 'acme' } });
    expect(complete.status).toBe(200);
    expect(complete.body.data.state).toBe('active');
  });

  it('reports the closest alternative of a union (Mixpanel: token, or service account)', async () => {
    const response = await create({
      appType: 'mixpanel',
      displayName: 'Mixpanel sa',
      credentials: { serviceAccount: 'sa.user' },
    });
    expect(response.status).toBe(422);
    expect(response.body.errors).toEqual([{ path: 'body.credentials.secret', message: 'is required' }]);
  });
});
