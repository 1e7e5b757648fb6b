import { startHarness, type Harness, type Tenant } from '../testing/harness';

// A write scope must not reach what its read scope hides. An apps.write
// key could point a Segment app at its own host and receive the stored write key; an
// integrations.write key could move a webhook through config.global.url, unchecked.

const ATTACKER = 'https://collector.attacker.example';

/** The resolver the control plane judges names with: fixed answers, as a tenant's DNS gives. */
const dns: Record<string, string[]> = {
  'collector.attacker.example': ['93.184.215.14'],
  'hooks.example.com': ['93.184.215.20'],
  'internal.example.com': ['10.0.0.5'],
  'metadata.example.com': ['93.184.215.21', '169.254.169.254'],
};

describe('URLs a tenant saves, and the secrets they would receive (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let appsWriter: string;
  let integrationsWriter: string;

  const schedule = { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 };
  const apps = (key = t.key) => ({
    create: (body: object) => h.as(key).post('/api/v1/apps').send(body),
    update: (id: string, body: object) => h.as(key).patch(`/api/v1/apps/${id}`).send(body),
  });
  const storedConfig = async (id: string) =>
    (await h.as(t.key).get(`/api/v1/apps/${id}`)).body.data.config as Record<string, unknown>;
  async function app(appType: string, credentials: object, config: object): Promise<string> {
    const response = await apps().create({
      appType,
      displayName: `${appType} ${Math.random()}`,
      credentials,
      config,
    });
    expect(response.status).toBe(201);
    return response.body.data.id as string;
  }
  const integration = (destinationAppId: string, global: object, key = t.key) =>
    h
      .as(key)
      .post('/api/v1/integrations')
      .send({
        destinationAppId,
        dataType: 'events',
        config: { global, tasks: [{ task_type: 'events' }] },
        schedule,
      });

  beforeAll(async () => {
    h = await startHarness('tenant urls', {
      egress: { resolve: async (name) => dns[name] ?? Promise.reject(new Error(`ENOTFOUND ${name}`)) },
    });
    t = await h.tenant();
    appsWriter = await t.keyWith(['apps.write']);
    integrationsWriter = await t.keyWith(['integrations.write']);
  });
  afterAll(() => h.close());

  describe('a stored secret follows only the host it was entered for', () => {
    it('refuses an apps.write key that points a Segment app at its own host without the write key', async () => {
      const segment = await app('segment', { writeKey: 'seg-stored-write-key' }, {});
      const moved = await apps(appsWriter).update(segment, { config: { endpoint: ATTACKER } });
      expect(moved.status).toBe(422);
      expect(moved.body).toMatchObject({
        code: 'secret_required_for_new_host',
        errors: [{ path: 'body.config', message: 'changes the host the stored credentials are sent to' }],
      });
      expect(JSON.stringify(moved.body)).not.toContain('seg-stored-write-key');
      expect(await storedConfig(segment)).toEqual({});
      // The masks a read answered are not the secret entered again.
      const masked = await apps(appsWriter).update(segment, {
        config: { endpoint: ATTACKER },
        credentials: { writeKey: '**********' },
      });
      expect([masked.status, masked.body.code]).toEqual([422, 'secret_required_for_new_host']);
      // Entering the write key again moves it, as does dropping the credentials.
      const reentered = await apps(appsWriter).update(segment, {
        config: { endpoint: 'https://hooks.example.com/segment' },
        credentials: { writeKey: 'seg-entered-again' },
      });
      expect(reentered.status).toBe(200);
      expect(await storedConfig(segment)).toEqual({ endpoint: 'https://hooks.example.com/segment' });
      // Another path on the same origin is not another host.
      const samePlace = await apps(appsWriter).update(segment, {
        config: { endpoint: 'https://hooks.example.com/v2' },
      });
      expect(samePlace.status).toBe(200);
      const dropped = await apps(appsWriter).update(segment, {
        config: { endpoint: ATTACKER },
        credentials: null,
      });
      expect([dropped.status, dropped.body.data.state, dropped.body.data.credentials]).toEqual([
        200,
        'inactive',
        null,
      ]);
    });

    it('asks for the secret again when a webhook, a Braze instance or a shop moves', async () => {
      const hook = await app(
        'webhook',
        { signingSecret: 'whsec-stored' },
        { url: 'https://hooks.example.com/a' },
      );
      const braze = await app(
        'braze',
        { apiKey: 'braze-stored' },
        { restEndpoint: 'https://rest.iad-01.braze.com' },
      );
      const shop = await app('shopify', { accessToken: 'shpat_stored' }, { shop: 'acme' });
      for (const [id, config] of [
        [hook, { url: `${ATTACKER}/hook` }],
        [braze, { restEndpoint: 'https://rest.fra-02.braze.eu' }],
        [shop, { shop: 'attacker-shop.myshopify.com' }],
      ] as const) {
        const moved = await apps(appsWriter).update(id, { config });
        expect([moved.status, moved.body.code]).toEqual([422, 'secret_required_for_new_host']);
      }
      // The same shop written another way is the same host.
      expect((await apps(appsWriter).update(shop, { config: { shop: 'acme.myshopify.com' } })).status).toBe(
        200,
      );
      // A webhook that had no URL gets one only with its secret.
      const bare = await app('webhook', { signingSecret: 'whsec-bare' }, {});
      const first = await apps(appsWriter).update(bare, { config: { url: 'https://hooks.example.com/b' } });
      expect([first.status, first.body.code]).toEqual([422, 'secret_required_for_new_host']);
    });

    it('refuses an integrations.write key that moves a webhook elsewhere through config.global.url', async () => {
      const hook = await app(
        'webhook',
        { signingSecret: 'whsec-hook' },
        { url: 'https://hooks.example.com/in' },
      );
      const created = await integration(hook, { url: `${ATTACKER}/steal` }, integrationsWriter);
      expect(created.status).toBe(422);
      expect(created.body).toMatchObject({
        code: 'secret_required_for_new_host',
        errors: [{ path: 'body.config.global.url' }],
      });
      // Another path on the app's own origin is fine, and so is no override.
      const sameHost = await integration(
        hook,
        { url: 'https://hooks.example.com/other-path' },
        integrationsWriter,
      );
      expect(sameHost.status).toBe(201);
      const moved = await h
        .as(integrationsWriter)
        .patch(`/api/v1/integrations/${sameHost.body.data.id}`)
        .send({ config: { global: { url: `${ATTACKER}/steal` }, tasks: [{ task_type: 'events' }] } });
      expect([moved.status, moved.body.code]).toEqual([422, 'secret_required_for_new_host']);
      const stored = await h.as(t.key).get(`/api/v1/integrations/${sameHost.body.data.id}`);
      expect(stored.body.data.config.global).toEqual({ url: 'https://hooks.example.com/other-path' });
      // A webhook app without a URL of its own takes none from an integration.
      const bare = await app('webhook', { signingSecret: 'whsec-bare' }, {});
      const onBare = await integration(bare, { url: 'https://hooks.example.com/x' }, integrationsWriter);
      expect([onBare.status, onBare.body.code]).toEqual([422, 'secret_required_for_new_host']);
    });
  });

  describe('every URL a tenant saves passes the egress policy', () => {
    const notPublic =
      'names a host that is not public (loopback, private, link-local, unique-local and other internal addresses are refused)';
    it.each([
      ['http://127.0.0.1:3000/internal', 'url_not_allowed', notPublic],
      ['http://169.254.169.254/latest/meta-data/', 'url_not_allowed', notPublic],
      ['http://[::ffff:10.0.0.1]/', 'url_not_allowed', notPublic],
      ['http://[::a00:1]/', 'url_not_allowed', notPublic],
      ['http://localhost:9200/', 'url_not_allowed', notPublic],
      ['https://internal.example.com/hook', 'url_not_allowed', notPublic],
      ['https://metadata.example.com/hook', 'url_not_allowed', notPublic],
      // The webhook's schema refuses user info before the policy sees it.
      [
        'https://user:pw@hooks.example.com/',
        'invalid_app_settings',
        'must not carry a user name or password',
      ],
    ])('refuses %s in an app, an integration override and a source', async (url, appCode, message) => {
      const asApp = await apps().create({
        appType: 'webhook',
        displayName: `hook ${Math.random()}`,
        credentials: { signingSecret: 's' },
        config: { url },
      });
      expect(asApp.status).toBe(422);
      expect(asApp.body).toMatchObject({ code: appCode, errors: [{ path: 'body.config.url' }] });
      expect(asApp.body.errors).toHaveLength(1);
      expect(JSON.stringify(asApp.body)).not.toMatch(/10\.0\.0\.5|169\.254\.169\.254.*169/);

      const hook = await app('webhook', { signingSecret: 's' }, {});
      const override = await integration(hook, { url, nested: [{ callbackUrl: url }] });
      expect(override.status).toBe(422);
      expect(override.body).toMatchObject({
        code: 'url_not_allowed',
        errors: [
          { path: 'body.config.global.url', message },
          { path: 'body.config.global.nested[0].callbackUrl', message },
        ],
      });

      const stripe = await app('stripe', { secretKey: 'sk_test_1' }, {});
      const source = await h
        .as(t.key)
        .post('/api/v1/sources')
        .send({ appId: stripe, syncType: 'stripe', config: { notifyUrl: url } });
      expect([source.status, source.body.code]).toEqual([422, 'url_not_allowed']);
    });

    it('refuses a URL without http(s) in an integration override, and a Segment endpoint at a private address', async () => {
      const hook = await app('webhook', { signingSecret: 's' }, {});
      const file = await integration(hook, { url: 'file:///etc/passwd' });
      expect(file.body).toMatchObject({
        code: 'url_not_allowed',
        errors: [{ path: 'body.config.global.url', message: 'must be an http or https URL' }],
      });
      const notUrl = await integration(hook, { url: 'hooks.example.com/x' });
      expect(notUrl.body).toMatchObject({ errors: [{ message: 'is not an absolute URL' }] });
      const segment = await apps().create({
        appType: 'segment',
        displayName: `segment ${Math.random()}`,
        credentials: { writeKey: 'w' },
        config: { endpoint: 'https://10.1.2.3/rudder' },
      });
      expect([segment.status, segment.body.code]).toEqual([422, 'url_not_allowed']);
    });

    it('accepts public URLs, and names no resolver can answer yet', async () => {
      expect(
        (
          await apps().create({
            appType: 'webhook',
            displayName: `hook ${Math.random()}`,
            credentials: { signingSecret: 's' },
            config: { url: 'https://not-registered-yet.example.net/hook' },
          })
        ).status,
      ).toBe(201);
      expect(
        (await app('segment', { writeKey: 'w' }, { endpoint: 'https://hooks.example.com' })).length,
      ).toBe(36);
    });
  });
});
