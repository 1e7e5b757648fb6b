import { PassThrough } from 'node:stream';
import {
  startHoldingProxy,
  startStripeLookAlike,
  stripeRecords,
  type HoldingProxy,
  type SourceLookAlike,
} from '@pipeline/connectors/testing';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { CredentialCipher } from '../apps/credential-cipher';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startBrazeUsersRun } from '../testing/integration-fixtures';
import { waitUntil } from '../testing/wait';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { recordSourceJobTransition, SourceSyncExecutor } from '../sources/source-sync-executor';
import { JobRunner, type JobOutcome } from './job-runner';
import { JobService } from './job.service';

interface JobBody {
  id: string;
  status: string;
  rowsRead: number;
  rowsWritten: number;
  error: { code: string; message: string } | null;
  finishedAt: string | null;
}

// POST /api/v1/jobs/{id}/cancel against real PostgreSQL (control plane and warehouse), the real
// job runner and a Stripe look-alike behind a proxy that holds a sync mid-stream: a queued job
// never starts, a running sync stops and keeps what it counted, an ended job is 409.
describe('cancelling a job (real PostgreSQL, job runner, Stripe look-alike)', () => {
  let h: Harness;
  let t: Tenant;
  let warehouse: ScratchWarehouse;
  let stripe: SourceLookAlike;
  let proxy: HoldingProxy;
  let runner: JobRunner;
  let sameProcess: JobRunner | undefined;
  const outcomes: { kind: string; outcome: JobOutcome }[] = [];

  /** A job runner of Stripe syncs through the proxy; `heartbeatIntervalMs` is how soon it notices a cancel by itself. */
  const startable = (heartbeatIntervalMs = 50) =>
    new JobRunner({
      dataSource: h.db.dataSource,
      logger: createLogger({ service: 'job-cancel-test', stream: new PassThrough(), level: 'warn' }),
      concurrency: 1,
      pollIntervalMs: 25,
      heartbeatIntervalMs,
      staleAfterMs: heartbeatIntervalMs * 2 + 10_000,
      maxAttempts: 3,
      retryBaseMs: 100,
      retryMaxMs: 1_000,
      metrics: {
        requeued: () => undefined,
        jobFinished: (kind, outcome) => outcomes.push({ kind, outcome }),
      },
    }).register(
      new SourceSyncExecutor({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
        logger: createLogger({ service: 'job-cancel-test', stream: new PassThrough(), level: 'warn' }),
        baseUrls: { stripe: proxy.url },
        http: { attempts: 1 },
        flushRows: 100,
      }),
    );

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('job cancel warehouse');
    h = await startHarness('job cancel');
    stripe = await startStripeLookAlike();
    stripe.data.set('customers', stripeRecords('customers', 1000, Math.floor(Date.now() / 1000)));
    proxy = await startHoldingProxy(stripe.url, { holdAfter: Infinity });
    runner = startable();
    t = await h.tenant();
  });

  afterAll(async () => {
    await runner.stop();
    await sameProcess?.stop();
    proxy.release();
    await proxy.close();
    await stripe.close();
    await h.close();
    await warehouse.drop();
  });

  async function stripeSource(): Promise<string> {
    const app = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({
        appType: 'stripe',
        displayName: `Stripe ${Math.random()}`,
        credentials: { secretKey: stripe.secret },
      });
    expect(app.status).toBe(201);
    const source = await h
      .as(t.key)
      .post('/api/v1/sources')
      .send({ appId: app.body.data.id, syncType: 'stripe', importTasks: ['customers'] });
    expect(source.status).toBe(201);
    return source.body.data.id as string;
  }

  async function sync(sourceId: string): Promise<string> {
    const response = await h.as(t.key).post(`/api/v1/sources/${sourceId}/sync`);
    expect(response.status).toBe(202);
    return response.body.data.id as string;
  }

  const job = async (id: string): Promise<JobBody> =>
    (await h.as(t.key).get(`/api/v1/jobs/${id}`)).body.data as JobBody;
  const source = async (id: string) => (await h.as(t.key).get(`/api/v1/sources/${id}`)).body.data;
  const cancel = (key: string, id: string) => h.as(key).post(`/api/v1/jobs/${id}/cancel`);

  it('cancels a queued job at once: it never starts, the source is idle and can sync again', async () => {
    const sourceId = await stripeSource();
    const jobId = await sync(sourceId);
    expect(await source(sourceId)).toMatchObject({ integrationStatus: 'queued', activeImportJobId: jobId });

    const cancelled = await cancel(t.key, jobId);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({
      id: jobId,
      status: 'cancelled',
      rowsRead: 0,
      rowsWritten: 0,
      startedAt: null,
      error: { code: 'cancelled', message: 'Cancelled by request' },
    });
    expect(cancelled.body.data.finishedAt).toEqual(expect.any(String));
    expect(await source(sourceId)).toMatchObject({
      integrationStatus: 'pending',
      activeImportJobId: null,
      lastSyncAt: null,
      lastError: null,
      consecutiveFailures: 0,
    });

    // Ended: cancelling again is a conflict with a code, and the job stays as it was.
    const again = await cancel(t.key, jobId);
    expect(again.status).toBe(409);
    expect(again.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(again.body).toMatchObject({ status: 409, code: 'job_finished' });
    expect(again.body.detail).toMatch(/cancelled/);
    // The source's one-active-job slot is free: a new sync queues.
    const next = await sync(sourceId);
    expect((await cancel(t.key, next)).body.data.status).toBe('cancelled');
  });

  it('needs the write scope of the job’s owner, and keeps another account’s job a 404', async () => {
    const sourceJob = await sync(await stripeSource());
    const run = await startBrazeUsersRun(h.as(t.key));
    const readOnly = await t.keyWith(['sources.read', 'integrations.read']);
    const sourcesWrite = await t.keyWith(['sources.read', 'sources.write']);
    const integrationsWrite = await t.keyWith(['integrations.read', 'integrations.write']);

    for (const [key, id, scope] of [
      // Neither write scope: refused before the job is looked up, naming one of them.
      [readOnly, sourceJob, /^This API key lacks the scope (sources|integrations)\.write$/],
      [integrationsWrite, sourceJob, /sources\.write/],
      [sourcesWrite, run.jobId, /integrations\.write/],
    ] as const) {
      const refused = await cancel(key, id);
      expect({ status: refused.status, code: refused.body.code }).toEqual({
        status: 403,
        code: 'insufficient_scope',
      });
      expect(refused.body.detail).toMatch(scope);
    }
    expect((await job(sourceJob)).status).toBe('queued');

    const other = await h.tenant();
    for (const id of [sourceJob, run.jobId, '00000000-0000-4000-8000-000000000000', 'not-a-job']) {
      const missing = await cancel(other.key, id);
      expect({ id, status: missing.status, code: missing.body.code }).toEqual({
        id,
        status: 404,
        code: 'not_found',
      });
    }
    expect((await job(run.jobId)).status).toBe('queued');

    // An integration run: integrations.write cancels it and the integration is idle again.
    const cancelledRun = await cancel(integrationsWrite, run.jobId);
    expect(cancelledRun.status).toBe(200);
    expect(cancelledRun.body.data).toMatchObject({ kind: 'integration_run', status: 'cancelled' });
    const integration = await h.as(t.key).get(`/api/v1/integrations/${run.integrationId}`);
    expect(integration.body.data).toMatchObject({ status: 'pending', latestJobId: run.jobId });
    expect((await cancel(sourcesWrite, sourceJob)).body.data.status).toBe('cancelled');
  });

  it('stops a running sync: cancelled, its rows so far kept, nothing written after', async () => {
    const sourceId = await stripeSource();
    // The credentials check and four pages of 100 go through; the fifth page waits at the proxy.
    proxy.holdAfter(5);
    runner.start();
    const jobId = await sync(sourceId);
    await waitUntil('the fifth page held at the proxy', async () => proxy.held() > 0);
    // Each page of 100 is flushed and counted: the fourth's counts are saved before the fifth is asked.
    const running = await waitUntil('four pages counted', async () => {
      const current = await job(jobId);
      return current.rowsRead === 400 && current;
    });
    expect(running).toMatchObject({ status: 'running', rowsWritten: 400 });
    expect(await source(sourceId)).toMatchObject({ integrationStatus: 'syncing', activeImportJobId: jobId });

    const cancelled = await cancel(t.key, jobId);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data).toMatchObject({
      status: 'cancelled',
      rowsRead: 400,
      rowsWritten: 400,
      error: { code: 'cancelled' },
    });
    // The executor sees it at its next heartbeat and stops, writing nothing.
    await waitUntil('the runner to stop the sync', async () =>
      outcomes.some((o) => o.kind === 'source_sync' && o.outcome === 'interrupted'),
    );
    proxy.release();
    const table = `${warehouseSchemaFor(t.accountId)}.stripe_customers`;
    const loaded = async () =>
      (await warehouse.query<{ rows: string }>(`SELECT count(*) AS rows FROM ${table}`)).rows[0]?.rows;
    expect(await loaded()).toBe('400');
    expect(await job(jobId)).toMatchObject({ status: 'cancelled', rowsRead: 400, rowsWritten: 400 });
    expect(await source(sourceId)).toMatchObject({
      integrationStatus: 'pending',
      activeImportJobId: null,
      lastSyncAt: null,
    });
    expect(outcomes.filter((o) => o.outcome !== 'interrupted')).toEqual([]);

    // What it loaded stays; the next sync reads the whole list again (a first sync saves no
    // cursor before its end) and upserts it: every customer once.
    proxy.holdAfter(Infinity);
    const next = await sync(sourceId);
    const done = await waitUntil('the next sync to end', async () => {
      const current = await job(next);
      return ['succeeded', 'failed', 'cancelled'].includes(current.status) && current;
    });
    expect(done).toMatchObject({ status: 'succeeded', rowsRead: 1000 });
    const all = await warehouse.query<{ rows: string; ids: string }>(
      `SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM ${table}`,
    );
    expect(all.rows[0]).toEqual({ rows: '1000', ids: '1000' });
  });

  it('stops the sync at once, not at its next heartbeat, when the job runner is in this process', async () => {
    await runner.stop();
    // Its heartbeat is a minute away: only the cancel's own notice can stop it within the bound.
    const inProcess = startable(60_000);
    sameProcess = inProcess;
    const jobs = new JobService(
      h.db.dataSource,
      () => inProcess.wake(),
      undefined,
      (jobId) => inProcess.cancelled(jobId),
    ).followCancels('source_sync', recordSourceJobTransition);
    const sourceId = await stripeSource();
    proxy.holdAfter(2);
    inProcess.start();
    const jobId = await sync(sourceId);
    await waitUntil('the sync held at the proxy', async () => proxy.held() > 0);
    const interrupted = outcomes.filter((o) => o.outcome === 'interrupted').length;
    const cancelled = await jobs.cancel(t.accountId, jobId);
    expect(cancelled).toMatchObject({ id: jobId, status: 'cancelled' });
    await waitUntil(
      'the runner to stop the sync',
      async () => outcomes.filter((o) => o.outcome === 'interrupted').length > interrupted,
      10_000,
    );
    expect(await source(sourceId)).toMatchObject({ integrationStatus: 'pending', activeImportJobId: null });
    proxy.release();
  });

  it('documents the endpoint with both write scopes and its 409', async () => {
    const doc = await h.as(t.key).get('/api/v1/openapi.json');
    const operation = doc.body.paths['/api/v1/jobs/{jobId}/cancel'].post;
    expect(operation.security).toEqual([{ api_key: ['sources.write'] }, { api_key: ['integrations.write'] }]);
    expect(Object.keys(operation.responses)).toEqual(expect.arrayContaining(['200', '403', '404', '409']));
  });
});
