import request from 'supertest';
import { hashToken } from '../auth/secret-token';
import {
  startHarness,
  TEST_INTERNAL_TOKEN,
  testDeliveryToken,
  type Harness,
  type Tenant,
} from '../testing/harness';
import { WriteKeyEntity } from './write-key.entity';

describe('write keys API and internal resolution (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;

  beforeAll(async () => {
    h = await startHarness('write keys');
    t = await h.tenant();
  });
  afterAll(() => h.close());

  const resolve = (writeKey: string, token = TEST_INTERNAL_TOKEN) =>
    request(h.app)
      .post('/internal/v1/write-keys/resolve')
      .set('Authorization', `Bearer ${token}`)
      .send({ writeKey });

  it('shows the key once at creation, stores only its hash, and lists it masked', async () => {
    const created = await h
      .as(t.key)
      .post('/api/v1/write-keys')
      .send({ name: 'Website', allowedOrigins: ['https://Shop.Example.com', 'example.org'] });
    expect(created.status).toBe(201);
    const { key, id } = created.body.data;
    expect(key).toMatch(/^wk_[A-Za-z0-9_-]{43}$/);
    expect(created.body.data).toMatchObject({
      name: 'Website',
      state: 'active',
      allowedOrigins: ['shop.example.com', 'example.org'],
      revokedAt: null,
    });
    const row = await h.db.dataSource.getRepository(WriteKeyEntity).findOneByOrFail({ id });
    expect(row.keyHash).toBe(hashToken(key));
    expect(JSON.stringify(row)).not.toContain(key);

    const listed = await h.as(t.key).get('/api/v1/write-keys');
    expect(listed.body.data[0]).toMatchObject({
      id,
      maskedKey: `${key.slice(0, 9)}…`,
      keyPrefix: key.slice(0, 9),
    });
    expect(JSON.stringify(listed.body)).not.toContain(key);
    expect(JSON.stringify((await h.as(t.key).get(`/api/v1/write-keys/${id}`)).body)).not.toContain(key);
  });

  it('sets allowed origins, rejects malformed ones, and revokes', async () => {
    const { body } = await h.as(t.key).post('/api/v1/write-keys').send({ name: 'App' });
    const url = `/api/v1/write-keys/${body.data.id}`;
    expect(
      (
        await h
          .as(t.key)
          .patch(url)
          .send({ allowedOrigins: ['app.example.com'] })
      ).body.data.allowedOrigins,
    ).toEqual(['app.example.com']);
    for (const bad of ['*.example.com', 'https://example.com/path', 'ftp://example.com', 'exa mple.com']) {
      const response = await h
        .as(t.key)
        .patch(url)
        .send({ allowedOrigins: [bad] });
      expect({ bad, status: response.status }).toEqual({ bad, status: 400 });
      expect(response.body.errors[0].path).toBe('body.allowedOrigins[0]');
    }
    const revoked = await h.as(t.key).delete(url);
    expect(revoked.body.data).toMatchObject({ state: 'revoked', revokedAt: expect.any(String) });
    expect((await h.as(t.key).patch(url).send({ name: 'x' })).body.code).toBe('write_key_revoked');
    const active = await h.as(t.key).get('/api/v1/write-keys?limit=100');
    expect(active.body.data.map((k: { id: string }) => k.id)).not.toContain(body.data.id);
    const gone = await h.as(t.key).get('/api/v1/write-keys?state=revoked');
    expect(gone.body.data.filter((k: { id: string }) => k.id === body.data.id)).toHaveLength(1);
  });

  it('keeps per-key rate limit overrides and hands them to ingestion', async () => {
    const created = await h
      .as(t.key)
      .post('/api/v1/write-keys')
      .send({ name: 'limited', rateLimits: { eventsPerSecond: 10, eventsPerDay: null } });
    expect(created.body.data.rateLimits).toEqual({ eventsPerSecond: 10, eventsPerDay: null });
    const updated = await h
      .as(t.key)
      .patch(`/api/v1/write-keys/${created.body.data.id}`)
      .send({ rateLimits: { eventsPerSecond: null, eventsPerDay: 5000 } });
    expect(updated.body.data.rateLimits).toEqual({ eventsPerSecond: null, eventsPerDay: 5000 });
    expect((await resolve(created.body.data.key)).body.data.rateLimits).toEqual({ eventsPerDay: 5000 });
  });

  describe('rate limit overrides are bounded by the operator ceilings', () => {
    // The defaults of WRITE_KEY_MAX_EVENTS_PER_SECOND and WRITE_KEY_MAX_EVENTS_PER_DAY.
    const ceiling = { eventsPerSecond: 10_000, eventsPerDay: 100_000_000 };

    it.each([
      ['above the per-second ceiling', { eventsPerSecond: 10_001, eventsPerDay: null }, 'eventsPerSecond'],
      ['above the per-day ceiling', { eventsPerSecond: null, eventsPerDay: 100_000_001 }, 'eventsPerDay'],
      ['past a 32-bit integer', { eventsPerSecond: null, eventsPerDay: 2 ** 31 + 1 }, 'eventsPerDay'],
      ['zero', { eventsPerSecond: 0, eventsPerDay: null }, 'eventsPerSecond'],
      ['negative', { eventsPerSecond: null, eventsPerDay: -5 }, 'eventsPerDay'],
      ['fractional', { eventsPerSecond: 1.5, eventsPerDay: null }, 'eventsPerSecond'],
    ])(
      'answers 422 with the field’s path for a value %s, on create and on update',
      async (_, rateLimits, field) => {
        const expected = {
          status: 422,
          code: 'invalid_rate_limit',
          errors: [{ path: `body.rateLimits.${field}`, message: expect.stringMatching(/from 1 to \d+/) }],
        };
        const created = await h.as(t.key).post('/api/v1/write-keys').send({ name: 'too much', rateLimits });
        expect(created.status).toBe(422);
        expect(created.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(created.body).toMatchObject(expected);

        const { body } = await h.as(t.key).post('/api/v1/write-keys').send({ name: 'ok' });
        const updated = await h.as(t.key).patch(`/api/v1/write-keys/${body.data.id}`).send({ rateLimits });
        expect(updated.status).toBe(422);
        expect(updated.body).toMatchObject(expected);
        const stored = await h.as(t.key).get(`/api/v1/write-keys/${body.data.id}`);
        expect(stored.body.data.rateLimits).toEqual({ eventsPerSecond: null, eventsPerDay: null });
      },
    );

    it('names every field out of range', async () => {
      const response = await h
        .as(t.key)
        .post('/api/v1/write-keys')
        .send({ name: 'both', rateLimits: { eventsPerSecond: 10_001, eventsPerDay: 0 } });
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([
        'body.rateLimits.eventsPerSecond',
        'body.rateLimits.eventsPerDay',
      ]);
    });

    it('accepts the ceilings themselves and reads them back', async () => {
      const created = await h
        .as(t.key)
        .post('/api/v1/write-keys')
        .send({ name: 'at the ceiling', rateLimits: ceiling });
      expect(created.status).toBe(201);
      const url = `/api/v1/write-keys/${created.body.data.id}`;
      expect((await h.as(t.key).get(url)).body.data.rateLimits).toEqual(ceiling);
      expect((await resolve(created.body.data.key)).body.data.rateLimits).toEqual(ceiling);
      const lowered = await h
        .as(t.key)
        .patch(url)
        .send({ rateLimits: { eventsPerSecond: 1, eventsPerDay: ceiling.eventsPerDay } });
      expect(lowered.status).toBe(200);
      expect((await h.as(t.key).get(url)).body.data.rateLimits).toEqual({
        eventsPerSecond: 1,
        eventsPerDay: ceiling.eventsPerDay,
      });
    });

    it('takes its ceilings from the configuration', async () => {
      const strict = await startHarness('write key ceilings', {
        writeKeyRateLimitCeilings: { eventsPerSecond: 50, eventsPerDay: 1000 },
      });
      try {
        const tenant = await strict.tenant();
        const send = (rateLimits: object) =>
          strict.as(tenant.key).post('/api/v1/write-keys').send({ name: 'k', rateLimits });
        expect((await send({ eventsPerSecond: 50, eventsPerDay: 1000 })).status).toBe(201);
        const over = await send({ eventsPerSecond: 51, eventsPerDay: 1001 });
        expect(over.status).toBe(422);
        expect(over.body.errors).toEqual([
          { path: 'body.rateLimits.eventsPerSecond', message: 'must be null or a whole number from 1 to 50' },
          { path: 'body.rateLimits.eventsPerDay', message: 'must be null or a whole number from 1 to 1000' },
        ]);
      } finally {
        await strict.close();
      }
    });
  });

  it('needs the write_keys scopes and hides other accounts’ keys', async () => {
    const appsOnly = await t.keyWith(['apps.read', 'apps.write']);
    expect((await h.as(appsOnly).get('/api/v1/write-keys')).status).toBe(403);
    expect((await h.as(appsOnly).post('/api/v1/write-keys').send({ name: 'x' })).status).toBe(403);
    const { body } = await h.as(t.key).post('/api/v1/write-keys').send({ name: 'Mine' });
    const other = await h.tenant();
    expect((await h.as(other.key).get(`/api/v1/write-keys/${body.data.id}`)).status).toBe(404);
    expect((await h.as(other.key).delete(`/api/v1/write-keys/${body.data.id}`)).status).toBe(404);
  });

  describe('POST /internal/v1/write-keys/resolve', () => {
    it('is closed to API keys, missing and wrong tokens', async () => {
      const key = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'x' })).body.data.key;
      for (const token of [t.key, 'wrong-token', '']) {
        const response = await resolve(key, token);
        expect(response.status).toBe(401);
        expect(response.body.code).toBe('invalid_service_token');
      }
    });

    it('answers 404 write_key_not_found for an unknown key and status revoked for a revoked one', async () => {
      expect((await resolve('wk_unknown')).body).toMatchObject({ status: 404, code: 'write_key_not_found' });
      const { body } = await h.as(t.key).post('/api/v1/write-keys').send({ name: 'r' });
      await h.as(t.key).delete(`/api/v1/write-keys/${body.data.id}`);
      expect((await resolve(body.data.key)).body.data).toMatchObject({ status: 'revoked', destinations: [] });
    });

    it('resolves to what ingestion needs: origins, warehouse, and which web-tracking integrations, without credentials or config', async () => {
      const tenant = await h.tenant();
      const app = (body: object) =>
        h
          .as(tenant.key)
          .post('/api/v1/apps')
          .send(body)
          .then((r) => r.body.data.id as string);
      const web = await app({ appType: 'web_tracking', displayName: 'Site' });
      const amplitude = await app({
        appType: 'amplitude',
        displayName: 'Amp',
        credentials: { apiKey: 'amp-key' },
        config: { region: 'eu' },
      });
      const braze = await app({
        appType: 'braze',
        displayName: 'Braze',
        credentials: { apiKey: 'braze-key' },
        config: { restEndpoint: 'https://rest.iad-01.braze.com' },
      });
      const unconnected = await app({ appType: 'webhook', displayName: 'Hook' });
      const stripe = await app({
        appType: 'stripe',
        displayName: 'Stripe',
        credentials: { secretKey: 'sk_test_x' },
      });
      const integration = (body: object) =>
        h
          .as(tenant.key)
          .post('/api/v1/integrations')
          .send({
            dataType: 'events',
            config: { global: { token: 'g' }, tasks: [{ task_type: 'events' }] },
            schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
            ...body,
          })
          .then((r) => r.body.data.id as string);
      const toAmplitude = await integration({ sourceAppId: web, destinationAppId: amplitude });
      const toBraze = await integration({ sourceAppId: web, destinationAppId: braze });
      await h.as(tenant.key).patch(`/api/v1/integrations/${toBraze}`).send({ isActive: false });
      await integration({ sourceAppId: web, destinationAppId: unconnected });
      await integration({ sourceAppId: stripe, destinationAppId: braze });
      const { body } = await h
        .as(tenant.key)
        .post('/api/v1/write-keys')
        .send({ name: 'site', allowedOrigins: ['example.com'] });

      const response = await resolve(body.data.key);
      expect(response.status).toBe(200);
      expect(response.body.data).toEqual({
        accountId: tenant.accountId,
        writeKeyId: body.data.id,
        status: 'active',
        allowedOrigins: ['example.com'],
        rateLimits: {},
        warehouse: {
          kind: 'warehouse',
          warehouseId: (await h.services.placements.placementOf(tenant.accountId)).warehouseId,
          engine: 'postgres',
          schema: `account_${tenant.accountId.replace(/-/g, '')}`,
          epoch: 1,
        },
        destinations: [
          {
            integrationId: toAmplitude,
            kind: 'product_analytics',
            appId: amplitude,
            appType: 'amplitude',
            dataType: 'events',
          },
        ],
        // The key binds no tracking plan (tracking-plans/tracking-plans.test.ts binds some).
        trackingPlan: null,
      });
      // Credentials travel only on the lookup the forwarding consumers use.
      expect(JSON.stringify(response.body)).not.toContain('amp-key');
      const lookedUp = await request(h.app)
        .post('/internal/v1/write-keys/lookup')
        .set('Authorization', `Bearer ${testDeliveryToken('amplitude')}`)
        .send({ writeKeyId: body.data.id });
      expect(lookedUp.body.data.destinations).toEqual([
        {
          integrationId: toAmplitude,
          kind: 'product_analytics',
          appId: amplitude,
          appType: 'amplitude',
          dataType: 'events',
          config: { global: { token: 'g' }, tasks: [{ task_type: 'events' }] },
          credentials: { apiKey: 'amp-key' },
          appConfig: { region: 'eu' },
          // The integration binds no function (docs/management-api.md#functions).
          function: null,
        },
      ]);
    });

    it('looks a tenant up by write key id for delivery, with its destinations even once the key is revoked', async () => {
      const tenant = await h.tenant();
      const web = (
        await h.as(tenant.key).post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'W' })
      ).body.data.id;
      const hook = (
        await h
          .as(tenant.key)
          .post('/api/v1/apps')
          .send({ appType: 'webhook', displayName: 'H', credentials: { signingSecret: 's' }, config: {} })
      ).body.data.id;
      const integration = await h
        .as(tenant.key)
        .post('/api/v1/integrations')
        .send({
          sourceAppId: web,
          destinationAppId: hook,
          dataType: 'events',
          config: { global: {}, tasks: [{ task_type: 'events' }] },
          schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
        });
      expect(integration.status).toBe(201);
      const { body } = await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'site' });
      const lookup = (writeKeyId: string, token = testDeliveryToken('webhook')) =>
        request(h.app)
          .post('/internal/v1/write-keys/lookup')
          .set('Authorization', `Bearer ${token}`)
          .send({ writeKeyId });
      expect((await lookup(body.data.id)).body.data).toMatchObject({
        accountId: tenant.accountId,
        status: 'active',
        destinations: [{ integrationId: integration.body.data.id, appType: 'webhook' }],
      });
      await h.as(tenant.key).delete(`/api/v1/write-keys/${body.data.id}`);
      expect((await lookup(body.data.id)).body.data).toMatchObject({
        status: 'revoked',
        destinations: [{ integrationId: integration.body.data.id }],
      });
      expect((await lookup('not-a-uuid')).status).toBe(404);
      expect((await lookup('00000000-0000-4000-8000-000000000000')).body.code).toBe('write_key_not_found');
      expect((await lookup(body.data.id, t.key)).status).toBe(401);
    });

    it('is not in the public OpenAPI document', async () => {
      const doc = await request(h.app).get('/api/v1/openapi.json');
      expect(Object.keys(doc.body.paths).some((p) => p.startsWith('/internal'))).toBe(false);
    });
  });
});
