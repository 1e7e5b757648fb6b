import { lookAlikeCredentials } from '@pipeline/destinations/testing';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { JobEntity } from './job.entity';

// GET /jobs/{id} serves both owners of jobs; an integration run's errors describe the
// integration, so a key that may only read sources must not see them (and the other way round).
describe('GET /api/v1/jobs/{id} needs the read scope of the job’s owner (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let sourceJobId: string;
  let integrationJobId: string;

  beforeAll(async () => {
    h = await startHarness('job scopes');
    t = await h.tenant();
    const app = async (appType: string, credentials: object, config?: object) => {
      const response = await h
        .as(t.key)
        .post('/api/v1/apps')
        .send({ appType, displayName: appType, credentials, config });
      expect(response.status).toBe(201);
      return response.body.data.id as string;
    };
    const source = await h
      .as(t.key)
      .post('/api/v1/sources')
      .send({ appId: await app('stripe', { secretKey: 'sk_test_1' }), syncType: 'stripe' });
    const sync = await h.as(t.key).post(`/api/v1/sources/${source.body.data.id}/sync`);
    expect(sync.status).toBe(202);
    sourceJobId = sync.body.data.id;

    const integration = await h
      .as(t.key)
      .post('/api/v1/integrations')
      .send({
        dataType: 'users',
        destinationAppId: await app('braze', lookAlikeCredentials.braze, {
          restEndpoint: 'https://rest.iad-01.braze.com',
        }),
        config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
      });
    expect(integration.status).toBe(201);
    const run = await h.as(t.key).post(`/api/v1/integrations/${integration.body.data.id}/run`);
    expect(run.status).toBe(202);
    integrationJobId = run.body.data.id;
    // What the scope protects: a failed run's error, naming the destination's complaint.
    await h.db.dataSource
      .getRepository(JobEntity)
      .update(
        { id: integrationJobId },
        { status: 'failed', error: { code: 'vendor_rejected', message: 'Braze: invalid attribute plan' } },
      );
  });
  afterAll(() => h.close());

  const get = (key: string, id: string) => h.as(key).get(`/api/v1/jobs/${id}`);

  it('shows a source’s job to sources.read and an integration’s run to integrations.read', async () => {
    const sourcesOnly = await t.keyWith(['sources.read']);
    const integrationsOnly = await t.keyWith(['integrations.read']);
    const source = await get(sourcesOnly, sourceJobId);
    expect(source.status).toBe(200);
    expect(source.body.data).toMatchObject({ id: sourceJobId, kind: 'source_sync' });
    const run = await get(integrationsOnly, integrationJobId);
    expect(run.status).toBe(200);
    expect(run.body.data).toMatchObject({
      id: integrationJobId,
      kind: 'integration_run',
      error: { code: 'vendor_rejected' },
    });
  });

  it('refuses an integration’s run to a key with sources.read only, as any missing scope', async () => {
    const sourcesOnly = await t.keyWith(['sources.read', 'sources.write', 'apps.read']);
    const response = await get(sourcesOnly, integrationJobId);
    expect(response.status).toBe(403);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject({ status: 403, code: 'insufficient_scope' });
    expect(response.body.detail).toMatch(/integrations\.read/);
    expect(JSON.stringify(response.body)).not.toMatch(/Braze|vendor_rejected/);
  });

  it('refuses a source’s job to a key with integrations.read only', async () => {
    const integrationsOnly = await t.keyWith(['integrations.read', 'integrations.write']);
    const response = await get(integrationsOnly, sourceJobId);
    expect(response.status).toBe(403);
    expect(response.body).toMatchObject({ code: 'insufficient_scope' });
    expect(response.body.detail).toMatch(/sources\.read/);
  });

  it('refuses a key with neither scope before looking the job up', async () => {
    const appsOnly = await t.keyWith(['apps.read']);
    for (const id of [sourceJobId, integrationJobId, '00000000-0000-4000-8000-000000000000']) {
      const response = await get(appsOnly, id);
      expect({ id, status: response.status, code: response.body.code }).toEqual({
        id,
        status: 403,
        code: 'insufficient_scope',
      });
    }
  });

  it('keeps another account’s jobs a 404, whatever the key’s scopes', async () => {
    const other = await h.tenant();
    for (const key of [
      other.key,
      await other.keyWith(['sources.read']),
      await other.keyWith(['integrations.read']),
    ]) {
      for (const id of [sourceJobId, integrationJobId]) {
        expect((await get(key, id)).body).toMatchObject({ status: 404, code: 'not_found' });
      }
    }
  });

  it('documents both scopes in the OpenAPI document', async () => {
    const doc = await h.as(t.key).get('/api/v1/openapi.json');
    const operation = doc.body.paths['/api/v1/jobs/{jobId}'].get;
    expect(operation.security).toEqual([{ api_key: ['sources.read'] }, { api_key: ['integrations.read'] }]);
    expect(operation.description).toMatch(/integrations\.read/);
  });
});
