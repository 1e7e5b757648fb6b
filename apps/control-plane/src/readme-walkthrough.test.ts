import { startHarness, type Harness } from './testing/harness';

// The "done when": a REST client following the README creates an app, a source and
// an integration, pauses and resumes them, triggers a sync and deletes them, over HTTP only.
describe('README walkthrough (real PostgreSQL)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('walkthrough');
  });
  afterAll(() => h.close());

  it('runs start to finish', async () => {
    const { key } = await h.tenant();
    const api = h.as(key);
    const ok = async (
      pending: PromiseLike<{ status: number; body: { data: Record<string, unknown> } }>,
      status: number,
    ) => {
      const response = await pending;
      expect(response.status).toBe(status);
      return response.body.data;
    };

    const shop = await ok(
      api.post('/api/v1/apps').send({
        appType: 'shopify',
        displayName: 'Shop',
        credentials: { accessToken: 'shpat_x' },
        config: { shop: 'acme' },
      }),
      201,
    );
    const braze = await ok(
      api.post('/api/v1/apps').send({
        appType: 'braze',
        displayName: 'Braze',
        credentials: { apiKey: 'r' },
        config: { restEndpoint: 'https://rest.iad-01.braze.com' },
      }),
      201,
    );
    const source = await ok(
      api.post('/api/v1/sources').send({
        appId: shop.id,
        syncType: 'shopify',
        syncFrequencyValue: 6,
        syncFrequencyUnit: 'hours',
        syncAnchorTimezone: 'Europe/Berlin',
      }),
      201,
    );
    const integration = await ok(
      api.post('/api/v1/integrations').send({
        sourceAppId: shop.id,
        destinationAppId: braze.id,
        dataType: 'customers',
        config: { global: {}, tasks: [{ task_type: 'user_attributes' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
      }),
      201,
    );

    expect(await ok(api.patch(`/api/v1/sources/${source.id}`).send({ isActive: false }), 200)).toMatchObject({
      state: 'inactive',
    });
    expect(await ok(api.patch(`/api/v1/sources/${source.id}`).send({ isActive: true }), 200)).toMatchObject({
      state: 'active',
    });
    expect(
      await ok(api.patch(`/api/v1/integrations/${integration.id}`).send({ isActive: false }), 200),
    ).toMatchObject({ status: 'paused' });
    expect(
      await ok(api.patch(`/api/v1/integrations/${integration.id}`).send({ isActive: true }), 200),
    ).toMatchObject({ status: 'pending' });

    const job = await ok(api.post(`/api/v1/sources/${source.id}/sync`), 202);
    expect(job).toMatchObject({ status: 'queued', sourceId: source.id });
    expect((await api.post(`/api/v1/sources/${source.id}/sync`)).status).toBe(409);
    expect(await ok(api.get(`/api/v1/sources/${source.id}`), 200)).toMatchObject({
      activeImportJobId: job.id,
    });

    expect((await api.delete(`/api/v1/apps/${shop.id}`)).status).toBe(409);
    await ok(api.delete(`/api/v1/integrations/${integration.id}`), 200);
    await ok(api.delete(`/api/v1/sources/${source.id}`), 200);
    expect(await ok(api.delete(`/api/v1/apps/${shop.id}`), 200)).toMatchObject({ state: 'deleted' });
    expect(await ok(api.delete(`/api/v1/apps/${braze.id}`), 200)).toMatchObject({ state: 'deleted' });
    const left = await api.get('/api/v1/apps');
    expect(left.body.pagination.total).toBe(0);
  });
});
