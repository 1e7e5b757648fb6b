import { SourceEntity } from '../sources/source.entity';
import { exampleSettings, startHarness, type Harness, type Tenant } from '../testing/harness';

describe('integrations API (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let braze: string;
  let stripe: string;
  let unconnected: string;

  const config = {
    global: { batchSize: 50, apiToken: 'secret-token-1' },
    tasks: [{ task_type: 'user_attributes', fields: ['email'] }],
  };
  const schedule = { frequencyValue: 6, frequencyUnit: 'hours', rollingWindowDays: 7 };

  /** An app: connected (the catalog's example settings) when `connected`, a draft otherwise. */
  async function makeApp(tenant: Tenant, appType: string, displayName: string, connected?: true) {
    const settings = connected ? exampleSettings(appType) : {};
    const response = await h
      .as(tenant.key)
      .post('/api/v1/apps')
      .send({ appType, displayName, ...settings });
    expect(response.status).toBe(201);
    return response.body.data.id as string;
  }
  const create = (body: object, key = t.key) => h.as(key).post('/api/v1/integrations').send(body);

  beforeAll(async () => {
    h = await startHarness('integrations api');
    t = await h.tenant();
    braze = await makeApp(t, 'braze', 'Braze', true);
    stripe = await makeApp(t, 'stripe', 'Stripe', true);
    unconnected = await makeApp(t, 'customer_io', 'Customer.io');
  });
  afterAll(() => h.close());

  it('creates a pending integration with the spec fields, masking secrets in config', async () => {
    const response = await create({
      destinationAppId: braze,
      sourceAppId: stripe,
      dataType: 'customers',
      config,
      schedule,
    });
    expect(response.status).toBe(201);
    expect(response.body.data).toMatchObject({
      accountId: t.accountId,
      sourceAppId: stripe,
      sourceAppName: 'Stripe',
      sourceAppType: 'stripe',
      destinationAppId: braze,
      destinationAppName: 'Braze',
      destinationAppType: 'braze',
      dataType: 'customers',
      config: { global: { batchSize: 50, apiToken: '**********' }, tasks: config.tasks },
      schedule,
      state: 'active',
      status: 'pending',
      isActive: true,
      lastSyncAt: null,
      lastError: null,
      consecutiveFailures: 0,
      importDependencyStatus: 'missing_source',
      latestJobId: null,
      sourceApp: { id: stripe, appType: 'stripe' },
      destinationApp: { id: braze, appType: 'braze', displayName: 'Braze' },
      importDependency: { status: 'missing_source', sourceIds: [] },
      historicalSyncStartDate: null,
      triggeredImportJobIds: [],
    });
  });

  it('follows the source app’s imports: missing_source, waiting, ready', async () => {
    const shop = await makeApp(t, 'shopify', 'Shop', true);
    const { body } = await create({
      destinationAppId: braze,
      sourceAppId: shop,
      dataType: 'orders',
      config,
      schedule,
    });
    expect(body.data.importDependencyStatus).toBe('missing_source');
    const source = await h
      .as(t.key)
      .post('/api/v1/sources')
      .send({ appId: shop, syncType: 'shopify', runNow: true });
    const waiting = await h.as(t.key).get(`/api/v1/integrations/${body.data.id}`);
    expect(waiting.body.data.importDependency).toEqual({
      status: 'waiting',
      sourceIds: [source.body.data.id],
    });
    expect(waiting.body.data.triggeredImportJobIds).toEqual([source.body.data.dispatchedJob.id]);
    await h.db.dataSource
      .getRepository(SourceEntity)
      .update({ id: source.body.data.id }, { lastSyncAt: new Date() });
    const ready = await h.as(t.key).get(`/api/v1/integrations/${body.data.id}`);
    expect(ready.body.data.importDependencyStatus).toBe('ready');
  });

  it('is a draft while the destination app has no credentials, and without a source app needs no import', async () => {
    const response = await create({ destinationAppId: unconnected, dataType: 'users', config, schedule });
    expect(response.body.data).toMatchObject({
      status: 'draft',
      sourceAppId: null,
      sourceApp: null,
      importDependencyStatus: 'not_required',
    });
  });

  it.each([
    [{ config: { global: {}, tasks: [] } }, 'body.config.tasks'],
    [{ config: { global: {}, tasks: [{ fields: [] }] } }, 'body.config.tasks[0].task_type'],
    [{ config: { tasks: [{ task_type: 'events' }] } }, 'body.config.global'],
    [
      { schedule: { frequencyValue: 0, frequencyUnit: 'hours', rollingWindowDays: 7 } },
      'body.schedule.frequencyValue',
    ],
    [
      { schedule: { frequencyValue: 1, frequencyUnit: 'weeks', rollingWindowDays: 7 } },
      'body.schedule.frequencyUnit',
    ],
    [{ schedule: { frequencyValue: 1, frequencyUnit: 'days' } }, 'body.schedule.rollingWindowDays'],
    [{ dataType: 'Users!' }, 'body.dataType'],
    [{ dataType: undefined }, 'body.dataType'],
    [{ extra: true }, 'body.extra'],
  ])('answers 400 for %j, naming %s', async (override, path) => {
    const response = await create({
      destinationAppId: braze,
      dataType: 'users',
      config,
      schedule,
      ...override,
    });
    expect(response.status).toBe(400);
    expect(response.body.errors.map((e: { path: string }) => e.path)).toEqual([path]);
  });

  it('answers 422 when an app is missing or has the wrong role', async () => {
    const other = await h.tenant();
    const foreign = await makeApp(other, 'braze', 'Foreign braze', true);
    for (const [body, code] of [
      [{ destinationAppId: stripe }, 'app_role_mismatch'],
      [{ destinationAppId: foreign }, 'invalid_reference'],
      [{ destinationAppId: braze, sourceAppId: braze }, 'app_role_mismatch'],
      [{ destinationAppId: braze, sourceAppId: '00000000-0000-4000-8000-000000000000' }, 'invalid_reference'],
    ] as const) {
      const response = await create({ dataType: 'users', config, schedule, ...body });
      expect({ status: response.status, code: response.body.code }).toEqual({ status: 422, code });
    }
  });

  it('pauses and resumes under the documented rules, and rejects other PATCH fields', async () => {
    const { body } = await create({ destinationAppId: braze, dataType: 'users', config, schedule });
    const url = `/api/v1/integrations/${body.data.id}`;
    expect((await h.as(t.key).patch(url).send({ isActive: false })).body.data).toMatchObject({
      state: 'inactive',
      status: 'paused',
      isActive: false,
    });
    expect((await h.as(t.key).patch(url).send({ isActive: true })).body.data).toMatchObject({
      state: 'active',
      status: 'pending',
      isActive: true,
    });
    const rescheduled = await h
      .as(t.key)
      .patch(url)
      .send({ schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 30 } });
    expect(rescheduled.body.data.schedule).toEqual({
      frequencyValue: 1,
      frequencyUnit: 'days',
      rollingWindowDays: 30,
    });
    const bad = await h.as(t.key).patch(url).send({ dataType: 'events' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors).toEqual([expect.objectContaining({ path: 'body.dataType' })]);
  });

  it('keeps stored secrets when a client sends back the masked config', async () => {
    const { body } = await create({ destinationAppId: braze, dataType: 'users', config, schedule });
    const url = `/api/v1/integrations/${body.data.id}`;
    const masked = (await h.as(t.key).get(url)).body.data.config;
    await h
      .as(t.key)
      .patch(url)
      .send({ config: { ...masked, global: { ...masked.global, batchSize: 75 } } });
    const row = await h.services.integrations.find(t.accountId, body.data.id);
    expect(row.config.global).toEqual({ batchSize: 75, apiToken: 'secret-token-1' });
  });

  it('soft-deletes, hides deleted from lists, and isolates accounts', async () => {
    const { body } = await create({ destinationAppId: braze, dataType: 'users', config, schedule });
    const url = `/api/v1/integrations/${body.data.id}`;
    const other = await h.tenant();
    expect((await h.as(other.key).get(url)).status).toBe(404);
    expect((await h.as(other.key).delete(url)).status).toBe(404);
    expect((await h.as(t.key).delete(url)).body.data.state).toBe('deleted');
    const listed = await h.as(t.key).get('/api/v1/integrations?limit=100');
    expect(listed.body.data.map((i: { id: string }) => i.id)).not.toContain(body.data.id);
    const deleted = await h.as(t.key).get('/api/v1/integrations?state=deleted&limit=100');
    expect(deleted.body.data.filter((i: { id: string }) => i.id === body.data.id)).toHaveLength(1);
    expect((await h.as(other.key).get('/api/v1/integrations')).body.pagination.total).toBe(0);
  });

  describe('list filters and sort', () => {
    let tenant: Tenant;
    const ids: Record<string, string> = {};
    let dest1: string;
    let dest2: string;
    let src: string;
    beforeAll(async () => {
      tenant = await h.tenant();
      dest1 = await makeApp(tenant, 'braze', 'B', true);
      dest2 = await makeApp(tenant, 'amplitude', 'A', true);
      src = await makeApp(tenant, 'stripe', 'S', true);
      ids.a = (
        await create(
          { destinationAppId: dest1, sourceAppId: src, dataType: 'customers', config, schedule },
          tenant.key,
        )
      ).body.data.id;
      ids.b = (
        await create({ destinationAppId: dest2, dataType: 'events', config, schedule }, tenant.key)
      ).body.data.id;
      ids.c = (
        await create({ destinationAppId: dest1, dataType: 'users', config, schedule }, tenant.key)
      ).body.data.id;
      await h.as(tenant.key).patch(`/api/v1/integrations/${ids.c}`).send({ isActive: false });
    });
    const names = (body: { data: { id: string }[] }) =>
      body.data.map((s) => Object.entries(ids).find(([, id]) => id === s.id)?.[0]);

    it.each([
      [`destination_app_id=DEST1&order=asc`, ['a', 'c']],
      [`source_app_id=SRC`, ['a']],
      ['data_type=events', ['b']],
      ['status=paused', ['c']],
      ['state=inactive', ['c']],
      ['status=pending&order=asc', ['a', 'b']],
      ['sort=updated_at&limit=1', ['c']],
    ])('%s', async (query, expected) => {
      const response = await h
        .as(tenant.key)
        .get(`/api/v1/integrations?${query.replace('DEST1', dest1).replace('SRC', src)}`);
      expect(response.status).toBe(200);
      expect(names(response.body)).toEqual(expected);
    });

    it.each(['status=done', 'source_app_id=x', 'destination_app_id=1', 'sort=status', 'offset=x'])(
      'answers 400 for %s',
      async (query) => {
        expect((await h.as(tenant.key).get(`/api/v1/integrations?${query}`)).status).toBe(400);
      },
    );
  });
});
