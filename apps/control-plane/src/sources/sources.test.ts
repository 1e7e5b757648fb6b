import { JobEntity } from '../jobs/job.entity';
import { exampleSettings, startHarness, type Harness, type Tenant } from '../testing/harness';
import { SourceEntity } from './source.entity';

describe('sources API (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let stripeId: string;

  beforeAll(async () => {
    h = await startHarness('sources api');
    t = await h.tenant();
    stripeId = (await makeApp(t, 'stripe', 'Stripe', { secretKey: 'sk_test_1' })).id;
  });
  afterAll(() => h.close());

  /** An app with `credentials`, and the catalog example's config (a Shopify app needs its shop). */
  async function makeApp(tenant: Tenant, appType: string, displayName: string, credentials?: object) {
    const settings = credentials ? { credentials, config: exampleSettings(appType).config } : {};
    const response = await h
      .as(tenant.key)
      .post('/api/v1/apps')
      .send({ appType, displayName, ...settings });
    expect(response.status).toBe(201);
    return response.body.data as { id: string };
  }
  const create = (body: object, key = t.key) => h.as(key).post('/api/v1/sources').send(body);

  describe('create', () => {
    it('creates an active source with documented defaults and no dispatched job', async () => {
      const response = await create({ appId: stripeId, syncType: 'stripe' });
      expect(response.status).toBe(201);
      expect(response.body.data).toMatchObject({
        accountId: t.accountId,
        appId: stripeId,
        appName: 'Stripe',
        syncType: 'stripe',
        importTasks: ['customers', 'charges', 'invoices', 'subscriptions'],
        syncFrequency: 'every day',
        syncFrequencyValue: 1,
        syncFrequencyUnit: 'days',
        syncAnchorTime: '00:00',
        syncAnchorTimezone: 'UTC',
        rollingPeriodDays: 7,
        state: 'active',
        isActive: true,
        integrationStatus: 'pending',
        lastSyncAt: null,
        lastError: null,
        consecutiveFailures: 0,
        oneOff: false,
        onboardingState: 'awaiting_first_sync',
        latestJobId: null,
        activeImportJobId: null,
        dispatchedJob: null,
        app: { id: stripeId, appType: 'stripe', displayName: 'Stripe', state: 'active' },
        warehouse: {
          schema: `account_${t.accountId.replace(/-/g, '')}`,
          tables: ['stripe_customers', 'stripe_charges', 'stripe_invoices', 'stripe_subscriptions'],
        },
      });
    });

    it('renders the frequency, converts rolling hours to days (rounded up) and keeps anchor and zone', async () => {
      const response = await create({
        appId: stripeId,
        syncType: 'stripe',
        importTasks: ['customers'],
        syncFrequencyValue: 6,
        syncFrequencyUnit: 'hours',
        syncAnchorTime: '03:30',
        syncAnchorTimezone: 'Australia/Lord_Howe',
        rollingPeriodHours: 36,
        historicalSyncStartDate: '2025-01-01T00:00:00Z',
        config: { accountId: 'acct_1', signingSecret: 'hidden' },
      });
      expect(response.status).toBe(201);
      expect(response.body.data).toMatchObject({
        syncFrequency: 'every 6 hours',
        syncAnchorTime: '03:30',
        syncAnchorTimezone: 'Australia/Lord_Howe',
        rollingPeriodDays: 2,
        historicalSyncStartDate: '2025-01-01T00:00:00.000Z',
        config: { accountId: 'acct_1', signingSecret: '**********' },
      });
      expect(response.body.data).not.toHaveProperty('rollingPeriodHours');
    });

    it('dispatches the first sync with runNow or oneOff', async () => {
      const runNow = await create({ appId: stripeId, syncType: 'stripe', runNow: true });
      expect(runNow.body.data.dispatchedJob).toMatchObject({
        kind: 'source_sync',
        status: 'queued',
        trigger: 'onboarding',
      });
      expect(runNow.body.data).toMatchObject({
        integrationStatus: 'queued',
        latestJobId: runNow.body.data.dispatchedJob.id,
        activeImportJobId: runNow.body.data.dispatchedJob.id,
        onboardingState: 'first_sync_running',
      });
      const oneOff = await create({ appId: stripeId, syncType: 'stripe', oneOff: true });
      expect(oneOff.body.data).toMatchObject({
        oneOff: true,
        dispatchedJob: { trigger: 'one_off', status: 'queued' },
      });
    });

    it.each([
      [{ appId: undefined }, 'body.appId'],
      [{ syncAnchorTime: '25:00' }, 'body.syncAnchorTime'],
      [{ syncAnchorTime: '9:00' }, 'body.syncAnchorTime'],
      [{ syncAnchorTimezone: 'Mars/Olympus' }, 'body.syncAnchorTimezone'],
      [{ syncAnchorTimezone: 'Europe/Berlin; DROP' }, 'body.syncAnchorTimezone'],
      [{ syncFrequencyUnit: 'weeks' }, 'body.syncFrequencyUnit'],
      [{ syncFrequencyValue: 0 }, 'body.syncFrequencyValue'],
      [{ syncFrequencyValue: 400, syncFrequencyUnit: 'days' }, 'body.syncFrequencyValue'],
      [{ syncFrequencyValue: 1.5 }, 'body.syncFrequencyValue'],
      [{ rollingPeriodHours: 0 }, 'body.rollingPeriodHours'],
      [{ historicalSyncStartDate: '2999-01-01T00:00:00Z' }, 'body.historicalSyncStartDate'],
      [{ historicalSyncStartDate: 'yesterday' }, 'body.historicalSyncStartDate'],
      [{ rollingPeriodDays: 3 }, 'body.rollingPeriodDays'],
    ])('answers 400 for %j, naming %s', async (override, path) => {
      const response = await create({ appId: stripeId, syncType: 'stripe', ...override });
      expect(response.status).toBe(400);
      expect(response.body.code).toBe('validation_failed');
      expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
    });

    it('answers 422 when the app is missing, deleted, another account’s, or not a source; or the type differs', async () => {
      const other = await h.tenant();
      const foreign = await makeApp(other, 'stripe', 'Foreign');
      const braze = await makeApp(t, 'braze', 'Braze dest');
      const gone = await makeApp(t, 'shopify', 'Gone shop');
      await h.as(t.key).delete(`/api/v1/apps/${gone.id}`);
      const cases: [object, string][] = [
        [{ appId: '00000000-0000-4000-8000-000000000000', syncType: 'stripe' }, 'invalid_reference'],
        [{ appId: 'nope', syncType: 'stripe' }, 'invalid_reference'],
        [{ appId: foreign.id, syncType: 'stripe' }, 'invalid_reference'],
        [{ appId: gone.id, syncType: 'shopify' }, 'invalid_reference'],
        [{ appId: braze.id, syncType: 'braze' }, 'app_role_mismatch'],
        [{ appId: stripeId, syncType: 'shopify' }, 'sync_type_mismatch'],
        [{ appId: stripeId, syncType: 'stripe', importTasks: ['orders'] }, 'unknown_import_task'],
      ];
      for (const [body, code] of cases) {
        const response = await create(body);
        expect({ body, status: response.status, code: response.body.code }).toEqual({
          body,
          status: 422,
          code,
        });
      }
    });
  });

  describe('update, pause and resume', () => {
    it('pauses (inactive, paused) and resumes (active, pending)', async () => {
      const { body } = await create({ appId: stripeId, syncType: 'stripe' });
      const id = body.data.id;
      const paused = await h.as(t.key).patch(`/api/v1/sources/${id}`).send({ isActive: false });
      expect(paused.body.data).toMatchObject({
        state: 'inactive',
        isActive: false,
        integrationStatus: 'paused',
      });
      const resumed = await h.as(t.key).patch(`/api/v1/sources/${id}`).send({ isActive: true });
      expect(resumed.body.data).toMatchObject({
        state: 'active',
        isActive: true,
        integrationStatus: 'pending',
      });
      const tasks = await h
        .as(t.key)
        .patch(`/api/v1/sources/${id}`)
        .send({ importTasks: ['charges'], config: { a: 1 } });
      expect(tasks.body.data).toMatchObject({
        importTasks: ['charges'],
        config: { a: 1 },
        warehouse: { tables: ['stripe_charges'] },
      });
    });

    it.each(['syncType', 'syncFrequencyValue', 'appId', 'state'])(
      'rejects PATCH of %s with 400 naming it',
      async (field) => {
        const { body } = await create({ appId: stripeId, syncType: 'stripe' });
        const response = await h
          .as(t.key)
          .patch(`/api/v1/sources/${body.data.id}`)
          .send({ [field]: 'x' });
        expect(response.status).toBe(400);
        expect(response.body.errors).toEqual([expect.objectContaining({ path: `body.${field}` })]);
      },
    );
  });

  describe('sync trigger', () => {
    it('answers 202 with the queued job, recorded in the jobs table and on the source', async () => {
      const { body } = await create({ appId: stripeId, syncType: 'stripe' });
      const response = await h.as(t.key).post(`/api/v1/sources/${body.data.id}/sync`);
      expect(response.status).toBe(202);
      expect(response.body.data).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        kind: 'source_sync',
        status: 'queued',
        trigger: 'manual',
        sourceId: body.data.id,
        integrationId: null,
        rowsRead: 0,
        rowsWritten: 0,
        error: null,
        attempts: 0,
        notBefore: null,
        createdAt: expect.any(String),
        startedAt: null,
        finishedAt: null,
      });
      const job = await h.db.dataSource
        .getRepository(JobEntity)
        .findOneByOrFail({ id: response.body.data.id });
      expect(job).toMatchObject({ accountId: t.accountId, status: 'queued' });
      const detail = await h.as(t.key).get(`/api/v1/sources/${body.data.id}`);
      expect(detail.body.data).toMatchObject({
        latestJobId: job.id,
        activeImportJobId: job.id,
        integrationStatus: 'queued',
      });
    });

    it('answers 409 sync_already_active while a job is queued, even for simultaneous triggers', async () => {
      const { body } = await create({ appId: stripeId, syncType: 'stripe' });
      const results = await Promise.all(
        Array.from({ length: 5 }, () => h.as(t.key).post(`/api/v1/sources/${body.data.id}/sync`)),
      );
      expect(results.map((r) => r.status).sort()).toEqual([202, 409, 409, 409, 409]);
      expect(results.find((r) => r.status === 409)?.body.code).toBe('sync_already_active');
      expect(await h.db.dataSource.getRepository(JobEntity).countBy({ sourceId: body.data.id })).toBe(1);
    });

    it('answers 409 source_not_active for a paused or deleted source, 404 for another account', async () => {
      const { body } = await create({ appId: stripeId, syncType: 'stripe' });
      await h.as(t.key).patch(`/api/v1/sources/${body.data.id}`).send({ isActive: false });
      const paused = await h.as(t.key).post(`/api/v1/sources/${body.data.id}/sync`);
      expect(paused.status).toBe(409);
      expect(paused.body.code).toBe('source_not_active');
      const other = await h.tenant();
      expect((await h.as(other.key).post(`/api/v1/sources/${body.data.id}/sync`)).status).toBe(404);
    });
  });

  describe('jobs', () => {
    it('lists a source’s jobs newest first with status filter and pages, and shows one job, within the account', async () => {
      const { body } = await create({ appId: stripeId, syncType: 'stripe' });
      const sourceId = body.data.id as string;
      const first = (await h.as(t.key).post(`/api/v1/sources/${sourceId}/sync`)).body.data;
      // The first job ends (as the sync engine would record it), so another can be queued.
      await h.db.dataSource
        .getRepository(JobEntity)
        .update(
          { id: first.id },
          { status: 'failed', error: { message: 'boom', code: 'vendor_unavailable' } },
        );
      const second = (await h.as(t.key).post(`/api/v1/sources/${sourceId}/sync`)).body.data;

      const list = await h.as(t.key).get(`/api/v1/sources/${sourceId}/jobs`);
      expect(list.status).toBe(200);
      expect(list.body.data.map((j: { id: string }) => j.id)).toEqual([second.id, first.id]);
      expect(list.body.pagination).toMatchObject({ total: 2, limit: 20, offset: 0, nextOffset: null });
      const failed = await h.as(t.key).get(`/api/v1/sources/${sourceId}/jobs?status=failed`);
      expect(failed.body.data).toEqual([
        expect.objectContaining({
          id: first.id,
          status: 'failed',
          error: { message: 'boom', code: 'vendor_unavailable' },
        }),
      ]);
      const paged = await h.as(t.key).get(`/api/v1/sources/${sourceId}/jobs?limit=1&order=asc`);
      expect(paged.body.data.map((j: { id: string }) => j.id)).toEqual([first.id]);
      expect(paged.body.pagination.nextOffset).toBe(1);
      expect((await h.as(t.key).get(`/api/v1/sources/${sourceId}/jobs?status=done`)).status).toBe(400);

      const one = await h.as(t.key).get(`/api/v1/jobs/${second.id}`);
      expect(one.body.data).toEqual(second);
      const other = await h.tenant();
      expect((await h.as(other.key).get(`/api/v1/jobs/${second.id}`)).status).toBe(404);
      expect((await h.as(other.key).get(`/api/v1/sources/${sourceId}/jobs`)).status).toBe(404);
      expect((await h.as(t.key).get('/api/v1/jobs/not-a-uuid')).status).toBe(404);
      const writeOnly = await t.keyWith(['apps.read']);
      expect((await h.as(writeOnly).get(`/api/v1/jobs/${second.id}`)).status).toBe(403);
    });
  });

  describe('delete and app deletion', () => {
    it('blocks deleting an app an active source uses (409 app_in_use), allows it once the source is paused', async () => {
      const app = await makeApp(t, 'shopify', 'Shop', { accessToken: 'shpat_1' });
      const { body } = await create({ appId: app.id, syncType: 'shopify' });
      const blocked = await h.as(t.key).delete(`/api/v1/apps/${app.id}`);
      expect(blocked.status).toBe(409);
      expect(blocked.body.code).toBe('app_in_use');
      expect((await h.as(t.key).get(`/api/v1/apps/${app.id}`)).body.data.state).toBe('active');
      await h.as(t.key).patch(`/api/v1/sources/${body.data.id}`).send({ isActive: false });
      expect((await h.as(t.key).delete(`/api/v1/apps/${app.id}`)).body.data.state).toBe('deleted');
    });

    it('soft-deletes a source: kept as deleted, hidden from lists unless asked for', async () => {
      const { body } = await create({ appId: stripeId, syncType: 'stripe' });
      const deleted = await h.as(t.key).delete(`/api/v1/sources/${body.data.id}`);
      expect(deleted.body.data).toMatchObject({ state: 'deleted', isActive: false });
      const listed = await h.as(t.key).get('/api/v1/sources?limit=100');
      expect(listed.body.data.map((s: { id: string }) => s.id)).not.toContain(body.data.id);
      const onlyDeleted = await h.as(t.key).get('/api/v1/sources?state=deleted&limit=100');
      expect(onlyDeleted.body.data.filter((s: { id: string }) => s.id === body.data.id)).toHaveLength(1);
      expect(
        (await h.as(t.key).patch(`/api/v1/sources/${body.data.id}`).send({ isActive: true })).status,
      ).toBe(409);
    });
  });

  describe('list', () => {
    let tenant: Tenant;
    const ids: Record<string, string> = {};
    beforeAll(async () => {
      tenant = await h.tenant();
      const stripe = await makeApp(tenant, 'stripe', 'S', { secretKey: 'sk_test_1' });
      const shop = await makeApp(tenant, 'shopify', 'Sh', { accessToken: 'shpat_1' });
      ids.stripeApp = stripe.id;
      for (const [name, appId, syncType] of [
        ['a', stripe.id, 'stripe'],
        ['b', shop.id, 'shopify'],
        ['c', stripe.id, 'stripe'],
      ] as const) {
        ids[name] = (await create({ appId, syncType }, tenant.key)).body.data.id;
      }
      const repo = h.db.dataSource.getRepository(SourceEntity);
      await repo.update(
        { id: ids.a },
        { lastSyncAt: new Date('2026-01-02T00:00:00Z'), integrationStatus: 'succeeded' },
      );
      await repo.update(
        { id: ids.c },
        { lastSyncAt: new Date('2026-01-05T00:00:00Z'), integrationStatus: 'failed' },
      );
    });

    const names = (body: { data: { id: string }[] }) =>
      body.data.map((s) => Object.entries(ids).find(([, id]) => id === s.id)?.[0]);

    it('filters by sync_type, app_id, integration_status and state', async () => {
      expect(names((await h.as(tenant.key).get('/api/v1/sources?sync_type=shopify')).body)).toEqual(['b']);
      expect(
        names((await h.as(tenant.key).get(`/api/v1/sources?app_id=${ids.stripeApp}&order=asc`)).body),
      ).toEqual(['a', 'c']);
      expect(names((await h.as(tenant.key).get('/api/v1/sources?integration_status=failed')).body)).toEqual([
        'c',
      ]);
      expect((await h.as(tenant.key).get('/api/v1/sources?state=inactive')).body.pagination.total).toBe(0);
    });

    it('sorts by last_sync_at with never-synced sources last, and pages', async () => {
      const response = await h.as(tenant.key).get('/api/v1/sources?sort=last_sync_at');
      expect(names(response.body)).toEqual(['c', 'a', 'b']);
      const asc = await h.as(tenant.key).get('/api/v1/sources?sort=last_sync_at&order=asc&limit=1&offset=1');
      expect(names(asc.body)).toEqual(['c']);
      expect(asc.body.pagination).toEqual({ total: 3, limit: 1, offset: 1, nextOffset: 2 });
    });

    it('sorts by updated_at and created_at', async () => {
      await h
        .as(tenant.key)
        .patch(`/api/v1/sources/${ids.a}`)
        .send({ config: { touched: true } });
      expect(names((await h.as(tenant.key).get('/api/v1/sources?sort=updated_at&limit=1')).body)).toEqual([
        'a',
      ]);
      expect(names((await h.as(tenant.key).get('/api/v1/sources?sort=created_at&order=asc')).body)).toEqual([
        'a',
        'b',
        'c',
      ]);
    });

    it.each(['app_id=abc', 'integration_status=done', 'sort=name', 'limit=0'])(
      'answers 400 for %s',
      async (query) => {
        const response = await h.as(tenant.key).get(`/api/v1/sources?${query}`);
        expect(response.status).toBe(400);
      },
    );
  });
});
