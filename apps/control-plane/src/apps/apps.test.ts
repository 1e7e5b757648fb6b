import { ApiKeyService } from '../auth/api-key.service';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { AppEntity } from './app.entity';

describe('apps API (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  const secret = 'sk_live_SUPERSECRET_4242';

  beforeAll(async () => {
    h = await startHarness('apps api');
    t = await h.tenant();
  });
  afterAll(() => h.close());

  const create = (body: object, key = t.key) => h.as(key).post('/api/v1/apps').send(body);

  describe('authentication and scopes', () => {
    it('answers 401 unauthenticated without a key, and 401 invalid_api_key with a wrong one', async () => {
      const none = await h.as('').get('/api/v1/apps').unset('Authorization');
      expect(none.status).toBe(401);
      expect(none.body).toMatchObject({ code: 'unauthenticated', status: 401 });
      const wrong = await h.as('plk_not-a-real-key').get('/api/v1/apps');
      expect(wrong.status).toBe(401);
      expect(wrong.body.code).toBe('invalid_api_key');
      const basic = await h.as('x').get('/api/v1/apps').set('Authorization', 'Basic abc');
      expect(basic.status).toBe(401);
    });

    it('answers 403 insufficient_scope when the key lacks the scope, and allows what it has', async () => {
      const readOnly = await t.keyWith(['apps.read']);
      expect((await h.as(readOnly).get('/api/v1/apps')).status).toBe(200);
      const denied = await create({ appType: 'stripe', displayName: 'Denied' }, readOnly);
      expect(denied.status).toBe(403);
      expect(denied.body).toMatchObject({
        code: 'insufficient_scope',
        detail: expect.stringContaining('apps.write'),
      });
    });

    it('refuses a revoked key', async () => {
      const key = await t.keyWith(['apps.read']);
      const [record] = (await new ApiKeyService(h.db.dataSource).list(t.accountId)).slice(-1);
      await new ApiKeyService(h.db.dataSource).revoke(record!.id);
      expect((await h.as(key).get('/api/v1/apps')).status).toBe(401);
    });
  });

  describe('create', () => {
    it('creates an inactive app without credentials, with the app type roles by default', async () => {
      const response = await create({ appType: 'amplitude', displayName: 'Amplitude prod' });
      expect(response.status).toBe(201);
      expect(response.body.data).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        accountId: t.accountId,
        appType: 'amplitude',
        displayName: 'Amplitude prod',
        role: ['destination'],
        state: 'inactive',
        errorMessage: null,
        lastSyncAt: null,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        permissions: [],
        config: {},
        consecutiveFailureCount: 0,
        credentials: null,
      });
    });

    it('creates an active app with credentials and never returns them', async () => {
      const response = await create({
        appType: 'stripe',
        displayName: 'Stripe',
        role: ['source'],
        credentials: { secretKey: `sk_live_${secret}` },
        config: { apiVersion: '2025-09-30.clover' },
      });
      expect(response.status).toBe(201);
      expect(response.body.data).toMatchObject({
        state: 'active',
        role: ['source'],
        credentials: { secretKey: '**********' },
        config: { apiVersion: '2025-09-30.clover' },
      });
      expect(JSON.stringify(response.body)).not.toContain(secret);
    });

    it('stores credentials only encrypted, with the key id, bound to the app', async () => {
      const { body } = await create({
        appType: 'braze',
        displayName: 'Braze',
        credentials: { apiKey: secret },
        config: { restEndpoint: 'https://rest.iad-01.braze.com' },
      });
      const row = await h.db.dataSource.getRepository(AppEntity).findOneByOrFail({ id: body.data.id });
      expect(row.credentialsKeyId).toBe('k2');
      expect(row.credentialsCiphertext).not.toContain(secret);
      expect(Buffer.from(row.credentialsCiphertext!, 'base64').toString('utf8')).not.toContain(secret);
      expect(h.services.apps.openCredentials(row)).toEqual({ apiKey: secret });
      // Copied onto another row, the ciphertext does not open: the app id is authenticated data.
      const other = { ...row, id: '00000000-0000-4000-8000-000000000000' };
      expect(() => h.services.apps.openCredentials(other)).toThrow();
    });

    it.each([
      [{ appType: 'stripe' }, 'body.displayName'],
      [{ displayName: 'x' }, 'body.appType'],
      [{ appType: 'stripe', displayName: 'x', extra: 1 }, 'body.extra'],
      [{ appType: 'stripe', displayName: 42 }, 'body.displayName'],
      [{ appType: 'stripe', displayName: 'x', role: ['owner'] }, 'body.role[0]'],
      [{ appType: 'stripe', displayName: '   ' }, 'body.displayName'],
      [{ appType: 'stripe', displayName: 'x', credentials: {} }, 'body.credentials'],
    ])('answers 400 validation_failed for %j, naming %s', async (body, path) => {
      const response = await create(body);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
    });

    it('answers 422 for an unknown app type and for a role the type does not support', async () => {
      const unknown = await create({ appType: 'myspace', displayName: 'x' });
      expect(unknown.status).toBe(422);
      expect(unknown.body.code).toBe('unknown_app_type');
      const role = await create({ appType: 'braze', displayName: 'Braze source', role: ['source'] });
      expect(role.status).toBe(422);
      expect(role.body.code).toBe('role_not_supported');
    });

    it('answers 409 app_name_taken for a duplicate name, case-insensitively', async () => {
      expect((await create({ appType: 'segment', displayName: 'CRM' })).status).toBe(201);
      const duplicate = await create({ appType: 'segment', displayName: 'crm' });
      expect(duplicate.status).toBe(409);
      expect(duplicate.body.code).toBe('app_name_taken');
    });
  });

  describe('get, patch and delete', () => {
    it('answers 404 for an unknown id, a malformed id, and another account’s app', async () => {
      const { body } = await create({ appType: 'mixpanel', displayName: 'Mixpanel' });
      const other = await h.tenant();
      for (const [key, id] of [
        [t.key, '00000000-0000-4000-8000-000000000000'],
        [t.key, 'not-an-id'],
        [other.key, body.data.id],
      ]) {
        const response = await h.as(key!).get(`/api/v1/apps/${id}`);
        expect(response.status).toBe(404);
        expect(response.body.code).toBe('not_found');
      }
      expect(
        (await h.as(other.key).patch(`/api/v1/apps/${body.data.id}`).send({ displayName: 'x' })).status,
      ).toBe(404);
      expect((await h.as(other.key).delete(`/api/v1/apps/${body.data.id}`)).status).toBe(404);
    });

    it('patches the allowed fields and moves between inactive and active with credentials', async () => {
      const { body } = await create({ appType: 'customer_io', displayName: 'Messages' });
      const id = body.data.id;
      const activated = await h
        .as(t.key)
        .patch(`/api/v1/apps/${id}`)
        .send({ credentials: { siteId: 'site-1', apiKey: secret } });
      expect(activated.body.data).toMatchObject({
        state: 'active',
        credentials: { siteId: '**********', apiKey: '**********' },
      });
      const renamed = await h
        .as(t.key)
        .patch(`/api/v1/apps/${id}`)
        .send({ displayName: 'Customer.io EU', role: ['destination'], config: { region: 'eu' } });
      expect(renamed.body.data).toMatchObject({
        displayName: 'Customer.io EU',
        role: ['destination'],
        config: { region: 'eu' },
        state: 'active',
      });
      const deactivated = await h.as(t.key).patch(`/api/v1/apps/${id}`).send({ credentials: null });
      expect(deactivated.body.data).toMatchObject({ state: 'inactive', credentials: null });
    });

    it('rejects PATCH fields other than displayName, credentials, config and role', async () => {
      const { body } = await create({ appType: 'webhook', displayName: 'Hook' });
      const response = await h.as(t.key).patch(`/api/v1/apps/${body.data.id}`).send({ appType: 'stripe' });
      expect(response.status).toBe(400);
      expect(response.body.errors).toEqual([expect.objectContaining({ path: 'body.appType' })]);
    });

    it('soft-deletes: the row stays as deleted, lists hide it, the name is free again, patching it is a conflict', async () => {
      const { body } = await create({ appType: 'onesignal', displayName: 'Push' });
      const id = body.data.id;
      const deleted = await h.as(t.key).delete(`/api/v1/apps/${id}`);
      expect(deleted.status).toBe(200);
      expect(deleted.body.data.state).toBe('deleted');
      expect((await h.as(t.key).delete(`/api/v1/apps/${id}`)).body.data.state).toBe('deleted');
      expect((await h.as(t.key).get(`/api/v1/apps/${id}`)).body.data.state).toBe('deleted');
      const live = await h.as(t.key).get('/api/v1/apps?limit=100');
      expect(live.body.data.map((a: { id: string }) => a.id)).not.toContain(id);
      const gone = await h.as(t.key).get('/api/v1/apps?state=deleted');
      expect(gone.body.data.filter((a: { id: string }) => a.id === id)).toHaveLength(1);
      expect((await create({ appType: 'onesignal', displayName: 'Push' })).status).toBe(201);
      const patch = await h.as(t.key).patch(`/api/v1/apps/${id}`).send({ displayName: 'Again' });
      expect(patch.status).toBe(409);
      expect(patch.body.code).toBe('resource_deleted');
    });
  });

  describe('list', () => {
    let tenant: Tenant;
    beforeAll(async () => {
      tenant = await h.tenant();
      for (const [appType, displayName] of [
        ['stripe', 'c-stripe'],
        ['braze', 'a-braze'],
        ['amplitude', 'b-amplitude'],
        ['shopify', 'd-shopify'],
        ['webhook', 'e-webhook'],
      ]) {
        await create({ appType, displayName }, tenant.key);
      }
    });

    it('pages with a total and a next offset, newest first by default', async () => {
      const first = await h.as(tenant.key).get('/api/v1/apps?limit=2');
      expect(first.status).toBe(200);
      expect(first.body.data.map((a: { displayName: string }) => a.displayName)).toEqual([
        'e-webhook',
        'd-shopify',
      ]);
      expect(first.body.pagination).toEqual({ total: 5, limit: 2, offset: 0, nextOffset: 2 });
      const last = await h.as(tenant.key).get('/api/v1/apps?limit=2&offset=4');
      expect(last.body.pagination).toEqual({ total: 5, limit: 2, offset: 4, nextOffset: null });
      expect(last.body.data).toHaveLength(1);
      const defaults = await h.as(tenant.key).get('/api/v1/apps');
      expect(defaults.body.pagination).toMatchObject({ limit: 20, offset: 0 });
    });

    it('sorts by display_name in either order', async () => {
      const asc = await h.as(tenant.key).get('/api/v1/apps?sort=display_name&order=asc');
      expect(asc.body.data.map((a: { displayName: string }) => a.displayName)).toEqual([
        'a-braze',
        'b-amplitude',
        'c-stripe',
        'd-shopify',
        'e-webhook',
      ]);
      const desc = await h.as(tenant.key).get('/api/v1/apps?sort=display_name');
      expect(desc.body.data[0].displayName).toBe('e-webhook');
    });

    it('filters by role, app_type and state', async () => {
      const destinations = await h
        .as(tenant.key)
        .get('/api/v1/apps?role=destination&sort=display_name&order=asc');
      expect(destinations.body.data.map((a: { displayName: string }) => a.displayName)).toEqual([
        'a-braze',
        'b-amplitude',
        'e-webhook',
      ]);
      const stripe = await h.as(tenant.key).get('/api/v1/apps?app_type=stripe');
      expect(stripe.body.data.map((a: { appType: string }) => a.appType)).toEqual(['stripe']);
      const inactive = await h.as(tenant.key).get('/api/v1/apps?state=inactive');
      expect(inactive.body.pagination.total).toBe(5);
      expect((await h.as(tenant.key).get('/api/v1/apps?state=active')).body.pagination.total).toBe(0);
    });

    it('sorts by updated_at', async () => {
      const all = await h.as(tenant.key).get('/api/v1/apps?sort=display_name&order=asc');
      const braze = all.body.data[0].id;
      await h
        .as(tenant.key)
        .patch(`/api/v1/apps/${braze}`)
        .send({ config: { restEndpoint: 'https://rest.iad-01.braze.com' } });
      const recent = await h.as(tenant.key).get('/api/v1/apps?sort=updated_at&limit=1');
      expect(recent.body.data[0].id).toBe(braze);
      const oldest = await h.as(tenant.key).get('/api/v1/apps?sort=updated_at&order=asc&limit=5');
      expect(oldest.body.data[4].id).toBe(braze);
    });

    it('never shows another account’s apps', async () => {
      const response = await h.as(tenant.key).get('/api/v1/apps?limit=100');
      // The five apps of this tenant, and only they: the length is what keeps this from passing on
      // an empty list. Other accounts' apps exist (t's, created above).
      expect(response.body.data.map((a: { displayName: string }) => a.displayName).sort()).toEqual([
        'a-braze',
        'b-amplitude',
        'c-stripe',
        'd-shopify',
        'e-webhook',
      ]);
      expect(new Set(response.body.data.map((a: { accountId: string }) => a.accountId))).toEqual(
        new Set([tenant.accountId]),
      );
    });

    it.each([
      'limit=0',
      'limit=101',
      'limit=abc',
      'limit=1.5',
      'offset=-1',
      'sort=name',
      'order=up',
      'state=gone',
      'role=owner',
    ])('answers 400 for %s instead of a silent default', async (query) => {
      const response = await h.as(tenant.key).get(`/api/v1/apps?${query}`);
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(response.body.errors[0].path).toMatch(/^query\./);
    });
  });
});
