import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { startStripeLookAlike, stripeRecords, type SourceLookAlike } from '@pipeline/connectors/testing';
import { parsePrometheusText, sampleSum, type PrometheusSample } from '@pipeline/destinations/testing';
import { createLogger } from '@pipeline/logger';
import { CredentialCipher } from '../apps/credential-cipher';
import { JobRunner } from '../jobs/job-runner';
import { SourceSyncExecutor } from '../sources/source-sync-executor';
import { TaskWorker } from '../tasks/task-worker';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { ControlPlaneMetrics, routeTemplateOf } from './control-plane-metrics';

const quiet = () =>
  createLogger({ service: 'metrics-test', level: 'error', stream: new PassThrough().resume() });

async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

// Real requests, jobs and task runs against real PostgreSQL and the Stripe look-alike, then
// GET /metrics parsed: each counter moved by exactly what was done.
describe('GET /metrics of the control plane (real PostgreSQL)', () => {
  let h: Harness;
  let t: Tenant;
  let warehouse: ScratchWarehouse;
  let stripe: SourceLookAlike;
  let runner: JobRunner | undefined;
  let worker: TaskWorker | undefined;

  const scrape = async (): Promise<{ text: string; samples: PrometheusSample[] }> => {
    const response = await request(h.app).get('/metrics');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return { text: response.text, samples: parsePrometheusText(response.text) };
  };
  const queued = (samples: PrometheusSample[], kind: string, state: string) =>
    samplesValue(samples, 'pipeline_control_plane_work_queue_items', { kind, state });
  const samplesValue = (samples: PrometheusSample[], name: string, labels: Record<string, string>) => {
    const found = samples.filter(
      (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
    );
    return found.length === 0 ? undefined : found.reduce((sum, s) => sum + s.value, 0);
  };
  const jobStatus = async (id: string) =>
    ((await h.db.dataSource.query('SELECT status FROM jobs WHERE id = $1', [id])) as { status: string }[])[0]
      ?.status;

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('metrics warehouse');
    h = await startHarness('metrics', { warehouse: warehouse.warehouses });
    stripe = await startStripeLookAlike();
    stripe.data.set('customers', stripeRecords('customers', 3, Math.floor(Date.now() / 1000) - 86_400));
    t = await h.tenant(['automations']);
  });

  afterAll(async () => {
    await worker?.stop();
    await runner?.stop();
    await stripe.close();
    await h.close();
    await warehouse.drop();
  });

  it('counts requests by route template and status, shows the queues, and times jobs and task runs by outcome', async () => {
    const app = async (secretKey: string) => {
      const response = await h
        .as(t.key)
        .post('/api/v1/apps')
        .send({ appType: 'stripe', displayName: `Stripe ${secretKey}`, credentials: { secretKey } });
      expect(response.status).toBe(201);
      return response.body.data.id as string;
    };
    const goodApp = await app(stripe.secret);
    const badApp = await app('sk_test_wrong');
    expect((await h.as(t.key).get('/api/v1/apps')).status).toBe(200);
    const missing = randomUUID();
    expect((await h.as(t.key).get(`/api/v1/apps/${missing}`)).status).toBe(404);
    expect((await request(h.app).get('/api/v1/apps')).status).toBe(401);
    expect((await h.as(t.key).get(`/api/v1/nothing-here/${missing}`)).status).toBe(404);

    // Two syncs queued, no runner yet; one task run pending, no worker yet.
    const jobs: string[] = [];
    for (const [appId, stream] of [
      [goodApp, 'customers'],
      [badApp, 'subscriptions'],
    ] as const) {
      const created = await h
        .as(t.key)
        .post('/api/v1/sources')
        .send({ appId, syncType: 'stripe', importTasks: [stream], runNow: true });
      expect(created.status).toBe(201);
      jobs.push(created.body.data.dispatchedJob.id as string);
    }
    const task = await h
      .as(t.key)
      .post('/api/v1/tasks')
      .send({ template_id: 'connector_health_audit', params: {} });
    expect(task.status).toBe(201);
    expect((await h.as(t.key).post(`/api/v1/tasks/${task.body.data.task_id}/start`).send({})).status).toBe(
      202,
    );

    const before = await scrape();
    const http = (method: string, route: string, status: string) =>
      sampleSum(before.samples, 'pipeline_control_plane_http_requests_total', { method, route, status });
    expect(http('GET', '/api/v1/apps/:appId', '404')).toBe(1);
    expect(
      sampleSum(before.samples, 'pipeline_control_plane_http_request_duration_seconds_count', {
        method: 'GET',
        route: '/api/v1/apps/:appId',
      }),
    ).toBe(1);
    expect(http('POST', '/api/v1/apps', '201')).toBe(2);
    expect(http('GET', '/api/v1/apps', '200')).toBe(1);
    expect(http('GET', '/api/v1/apps', '401')).toBe(1);
    expect(http('POST', '/api/v1/sources', '201')).toBe(2);
    expect(http('POST', '/api/v1/tasks/:taskId/start', '202')).toBe(1);
    expect(http('GET', 'unmatched', '404')).toBe(1);
    // Every request so far is in the histogram, under the same labels as the counter.
    expect(sampleSum(before.samples, 'pipeline_control_plane_http_request_duration_seconds_count')).toBe(
      sampleSum(before.samples, 'pipeline_control_plane_http_requests_total'),
    );
    // Route templates only: no id reaches a label.
    expect(before.text).not.toContain(missing);
    expect(before.text).not.toContain(goodApp);
    expect(queued(before.samples, 'source_sync', 'queued')).toBe(2);
    expect(queued(before.samples, 'source_sync', 'running')).toBe(0);
    expect(queued(before.samples, 'integration_run', 'queued')).toBe(0);
    expect(queued(before.samples, 'task_run', 'pending')).toBe(1);
    // The default process metrics are on the same registry.
    expect(sampleSum(before.samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);

    // The runner and the worker count into the app's metrics.
    const settings = {
      dataSource: h.db.dataSource,
      logger: quiet(),
      concurrency: 2,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 50,
      staleAfterMs: 60_000,
      maxAttempts: 3,
      metrics: h.metrics,
    };
    runner = new JobRunner({ ...settings, retryBaseMs: 100, retryMaxMs: 1000 }).register(
      new SourceSyncExecutor({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
        logger: quiet(),
        baseUrls: { stripe: stripe.url },
        http: { attempts: 2, minDelayMs: 5 },
      }),
    );
    worker = new TaskWorker({ ...settings, warehouse: warehouse.warehouses });
    runner.start();
    worker.start();
    const statuses = await until(
      () => Promise.all(jobs.map(jobStatus)),
      (s) => s.every((status) => status === 'succeeded' || status === 'failed'),
      'both syncs to finish',
    );
    expect(statuses).toEqual(['succeeded', 'failed']);
    const after = await until(
      scrape,
      // Timed just after their rows settle.
      ({ samples }) =>
        sampleSum(samples, 'pipeline_control_plane_task_run_duration_seconds_count', {
          template: 'connector_health_audit',
        }) === 1 && sampleSum(samples, 'pipeline_control_plane_job_duration_seconds_count') === 2,
      'the syncs and the task run to be timed',
    );
    const durations = (kind: string, outcome: string) =>
      sampleSum(after.samples, 'pipeline_control_plane_job_duration_seconds_count', { kind, outcome });
    expect(durations('source_sync', 'succeeded')).toBe(1);
    expect(durations('source_sync', 'failed')).toBe(1);
    expect(sampleSum(after.samples, 'pipeline_control_plane_job_duration_seconds_count')).toBe(2);
    expect(
      sampleSum(after.samples, 'pipeline_control_plane_job_duration_seconds_sum', { kind: 'source_sync' }),
    ).toBeGreaterThan(0);
    expect(
      sampleSum(after.samples, 'pipeline_control_plane_task_run_duration_seconds_count', {
        template: 'connector_health_audit',
        outcome: 'succeeded',
      }),
    ).toBe(1);
    expect(queued(after.samples, 'source_sync', 'queued')).toBe(0);
    expect(queued(after.samples, 'task_run', 'pending')).toBe(0);
    expect(sampleSum(after.samples, 'pipeline_control_plane_reaper_requeued_total')).toBe(0);

    // A worker died mid-sync: its job's heartbeat is stale. The reaper puts it back, once.
    await h.db.dataSource.query(
      `UPDATE jobs SET status = 'running', worker_id = 'dead-worker', heartbeat_at = now() - interval '1 hour',
              finished_at = NULL WHERE id = $1`,
      [jobs[0]],
    );
    await runner.reap();
    await until(
      () => jobStatus(jobs[0]!),
      (status) => status === 'succeeded',
      'the requeued sync to succeed again',
    );
    const reaped = await until(
      scrape,
      ({ samples }) =>
        sampleSum(samples, 'pipeline_control_plane_job_duration_seconds_count', {
          kind: 'source_sync',
          outcome: 'succeeded',
        }) === 2,
      'the second run to be timed',
    );
    expect(
      sampleSum(reaped.samples, 'pipeline_control_plane_reaper_requeued_total', { kind: 'source_sync' }),
    ).toBe(1);
    // /metrics is answered without a key and counted as its own route (a scrape once it ended).
    expect(
      sampleSum(reaped.samples, 'pipeline_control_plane_http_requests_total', {
        route: '/metrics',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('answers within the queue query timeout when the queue tables are locked, without the queue gauge', async () => {
    const metrics = new ControlPlaneMetrics({
      dataSource: h.db.dataSource,
      logger: quiet(),
      queueQueryTimeoutMs: 300,
    });
    const locker = h.db.dataSource.createQueryRunner();
    await locker.connect();
    await locker.startTransaction();
    try {
      await locker.query('LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE');
      // The lock is held until `finally`: a scrape that waited for it would never answer.
      const samples = parsePrometheusText(await metrics.registry.metrics());
      expect(samples.filter((s) => s.name === 'pipeline_control_plane_work_queue_items')).toEqual([]);
      expect(sampleSum(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    } finally {
      await locker.rollbackTransaction();
      await locker.release();
    }
    const unlocked = parsePrometheusText(await metrics.registry.metrics());
    expect(sampleSum(unlocked, 'pipeline_control_plane_work_queue_items', { kind: 'source_sync' })).toBe(0);
  });

  it('is not in the OpenAPI document', async () => {
    const doc = await request(h.app).get('/api/v1/openapi.json');
    expect(Object.keys(doc.body.paths as object)).not.toContain('/metrics');
  });

  it('labels the docs mount and unmatched paths without their ids', () => {
    const of = (originalUrl: string, route?: string, baseUrl = '') =>
      routeTemplateOf({ originalUrl, baseUrl, ...(route ? { route: { path: route } } : {}) } as never);
    expect(of('/api/v1/apps/123', '/api/v1/apps/:appId')).toBe('/api/v1/apps/:appId');
    expect(of('/docs/swagger-ui.css')).toBe('/docs');
    expect(of('/docsx')).toBe('unmatched');
    expect(of('/api/v1/apps/123?x=1')).toBe('unmatched');
  });
});
