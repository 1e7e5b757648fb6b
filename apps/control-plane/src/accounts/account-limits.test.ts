import { lookAlikeCredentials } from '@pipeline/destinations/testing';
import { Scheduler } from '../jobs/scheduler';
import { dueIntegrations } from '../integrations/integration-schedule';
import { dueSources } from '../sources/source-schedule';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { createLogger } from '@pipeline/logger';
import { PassThrough } from 'node:stream';

const limits = { writeKeys: 2, sources: 4, integrations: 2, queuedRuns: 2 };

// Each cap: one past it is refused with 409 account_limit_reached naming the limit and its value;
// deleting (or revoking, or a run leaving the queue) frees a slot; other accounts are unaffected.
describe('per-account limits (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;

  beforeAll(async () => {
    h = await startHarness('account limits', { accountLimits: limits });
  });
  afterAll(() => h.close());
  beforeEach(async () => {
    t = await h.tenant(['automations']);
  });

  function expectRefused(
    response: { status: number; body: Record<string, unknown> },
    name: string,
    max: number,
  ) {
    expect(response.status).toBe(409);
    expect(response.body).toMatchObject({
      status: 409,
      code: 'account_limit_reached',
      limit: { name, maximum: max },
    });
    expect(response.body.detail).toMatch(new RegExp(`limit of ${max} `));
  }

  const writeKey = (key = t.key) =>
    h
      .as(key)
      .post('/api/v1/write-keys')
      .send({ name: `site ${Math.random()}` });

  async function app(appType: string, credentials: object, config?: object): Promise<string> {
    const response = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType, displayName: `${appType} ${Math.random()}`, credentials, config });
    expect(response.status).toBe(201);
    return response.body.data.id as string;
  }

  const source = (appId: string, extra: object = {}) =>
    h
      .as(t.key)
      .post('/api/v1/sources')
      .send({ appId, syncType: 'stripe', ...extra });

  it('write keys: refuses a third active key, and a revoked one frees its slot', async () => {
    const first = await writeKey();
    expect(first.status).toBe(201);
    expect((await writeKey()).status).toBe(201);
    const refused = await writeKey();
    expectRefused(refused, 'write_keys', 2);
    expect(refused.body.detail).toBe(
      'This account has reached its limit of 2 active write keys; revoke one to create another',
    );
    expect(
      await h.db.dataSource.query('SELECT count(*)::int AS n FROM write_keys WHERE account_id = $1', [
        t.accountId,
      ]),
    ).toEqual([{ n: 2 }]);

    expect((await h.as(t.key).delete(`/api/v1/write-keys/${first.body.data.id}`)).status).toBe(200);
    expect((await writeKey()).status).toBe(201);
    // Another account has its own slots.
    const other = await h.tenant();
    expect((await writeKey(other.key)).status).toBe(201);
  });

  it('write keys: parallel creates never pass the limit', async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => writeKey()));
    expect(answers.map((a) => a.status).sort()).toEqual([201, 201, 409, 409, 409, 409]);
    expect(
      await h.db.dataSource.query('SELECT count(*)::int AS n FROM write_keys WHERE account_id = $1', [
        t.accountId,
      ]),
    ).toEqual([{ n: 2 }]);
  });

  it('sources: refuses a fifth, and a deleted one frees its slot', async () => {
    const stripe = await app('stripe', { secretKey: 'sk_test_1' });
    const ids: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const created = await source(stripe);
      expect(created.status).toBe(201);
      ids.push(created.body.data.id);
    }
    const refused = await source(stripe);
    expectRefused(refused, 'sources', 4);
    expect(refused.body.detail).toMatch(/4 sources; delete one/);
    expect((await h.as(t.key).delete(`/api/v1/sources/${ids[0]}`)).status).toBe(200);
    expect((await source(stripe)).status).toBe(201);
  });

  it('integrations: refuses a third, and a deleted one frees its slot', async () => {
    const braze = await app('braze', lookAlikeCredentials.braze, {
      restEndpoint: 'https://rest.iad-01.braze.com',
    });
    const integration = () =>
      h
        .as(t.key)
        .post('/api/v1/integrations')
        .send({
          dataType: 'users',
          destinationAppId: braze,
          config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
          schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
        });
    const first = await integration();
    expect(first.status).toBe(201);
    expect((await integration()).status).toBe(201);
    expectRefused(await integration(), 'integrations', 2);
    expect((await h.as(t.key).delete(`/api/v1/integrations/${first.body.data.id}`)).status).toBe(200);
    expect((await integration()).status).toBe(201);
  });

  it('queued runs: syncs and task runs share the limit, a run leaving the queue frees a slot', async () => {
    const stripe = await app('stripe', { secretKey: 'sk_test_1' });
    const sources: string[] = [];
    for (let i = 0; i < 3; i += 1) sources.push((await source(stripe)).body.data.id);
    const sync = (id: string) => h.as(t.key).post(`/api/v1/sources/${id}/sync`);
    expect((await sync(sources[0]!)).status).toBe(202);
    const task = await h.as(t.key).post('/api/v1/tasks').send({ template_id: 'connector_health_audit' });
    expect(task.status).toBe(201);
    const start = () => h.as(t.key).post(`/api/v1/tasks/${task.body.data.task_id}/start`).send({});
    expect((await start()).status).toBe(202);

    // One queued sync and one pending task run: the limit of 2 is reached.
    expectRefused(await sync(sources[1]!), 'queued_runs', 2);
    const refusedSource = await source(stripe, { runNow: true });
    expectRefused(refusedSource, 'queued_runs', 2);
    expect(
      await h.db.dataSource.query(
        'SELECT count(*)::int AS n FROM sources WHERE account_id = $1 AND deleted_at IS NULL',
        [t.accountId],
      ),
    ).toEqual([{ n: 3 }]);

    // The scheduler skips the account's due slots (and moves them on) instead of failing its
    // tick, which would roll the tick back and retry the same slots on every tick.
    const braze = await app('braze', lookAlikeCredentials.braze, {
      restEndpoint: 'https://rest.iad-01.braze.com',
    });
    const integration = await h
      .as(t.key)
      .post('/api/v1/integrations')
      .send({
        dataType: 'users',
        destinationAppId: braze,
        config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
      });
    expect(integration.status).toBe(201);
    await h.db.dataSource.query(
      "UPDATE sources SET next_sync_at = now() - interval '1 minute' WHERE id = $1",
      [sources[2]],
    );
    await h.db.dataSource.query(
      "UPDATE integrations SET next_run_at = now() - interval '1 minute' WHERE id = $1",
      [integration.body.data.id],
    );
    const schedulerLogs: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => schedulerLogs.push(chunk.toString('utf8')));
    const scheduler = new Scheduler({
      dataSource: h.db.dataSource,
      logger: createLogger({ service: 'limits-test', stream }),
      intervalMs: 60_000,
    })
      .register('sources', dueSources(h.services.jobs))
      .register('integrations', dueIntegrations(h.services.jobs));
    // Other tests' accounts may have due integrations too: only this account's slots are checked.
    await scheduler.tick();
    expect(schedulerLogs.join('')).not.toMatch(/scheduler tick failed/);
    const [slots] = (await h.db.dataSource.query(
      `SELECT (SELECT next_sync_at > now() FROM sources WHERE id = $1) AS source_moved,
              (SELECT next_run_at > now() FROM integrations WHERE id = $2) AS integration_moved,
              (SELECT count(*)::int FROM jobs WHERE account_id = $3 AND status = 'queued') AS queued`,
      [sources[2], integration.body.data.id, t.accountId],
    )) as { source_moved: boolean; integration_moved: boolean; queued: number }[];
    expect(slots).toEqual({ source_moved: true, integration_moved: true, queued: 1 });

    // Cancelling the task run (it leaves the queue) frees a slot.
    expect((await h.as(t.key).post(`/api/v1/tasks/${task.body.data.task_id}/cancel`)).status).toBe(200);
    expect((await sync(sources[1]!)).status).toBe(202);
    expectRefused(await start(), 'queued_runs', 2);

    // Another account queues freely.
    const other = await h.tenant();
    const otherApp = (
      await h
        .as(other.key)
        .post('/api/v1/apps')
        .send({ appType: 'stripe', displayName: 'theirs', credentials: { secretKey: 'sk_test_2' } })
    ).body.data.id;
    const theirs = await h
      .as(other.key)
      .post('/api/v1/sources')
      .send({ appId: otherApp, syncType: 'stripe', runNow: true });
    expect(theirs.status).toBe(201);
    expect(theirs.body.data.dispatchedJob.status).toBe('queued');
  });

  it('documents the refusal in the OpenAPI document', async () => {
    const doc = (await h.as(t.key).get('/api/v1/openapi.json')).body;
    for (const [path, method] of [
      ['/api/v1/write-keys', 'post'],
      ['/api/v1/sources', 'post'],
      ['/api/v1/integrations', 'post'],
      ['/api/v1/sources/{sourceId}/sync', 'post'],
      ['/api/v1/integrations/{integrationId}/run', 'post'],
      ['/api/v1/tasks/{taskId}/start', 'post'],
    ] as const) {
      expect({ path, description: doc.paths[path][method].responses['409']?.description }).toEqual({
        path,
        description: expect.stringMatching(/account_limit_reached/),
      });
    }
  });
});
