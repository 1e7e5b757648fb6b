import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { AppError } from '@pipeline/errors';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { createDataSource } from '../data-model';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, trackRow, userRow, type ScratchWarehouse } from '../testing/warehouse';
import { TaskWorker, type TaskWorkerOptions } from './task-worker';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

interface RunRow {
  id: string;
  status: string;
  attempts: number;
  worker_id: string | null;
  progress: { steps: { id: string; status: string }[]; completedSteps: number; totalSteps: number };
  result: Record<string, unknown> | null;
  error: { code: string; message: string; step?: string } | null;
  started_at: Date | null;
  finished_at: Date | null;
}

interface Finding {
  severity: string;
  code: string;
  resource: { type: string; id?: string; name: string };
  message: string;
  recommendation: string;
}

describe('task runs: worker and templates (real PostgreSQL)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let t: Tenant;
  const workers: TaskWorker[] = [];
  // The crashed worker's failed writes are logged; keep them out of the test output.
  const logger = createLogger({
    service: 'task-worker-test',
    level: 'error',
    stream: new PassThrough().resume(),
  });

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('task runs warehouse');
    h = await startHarness('task runs', { warehouse: warehouse.warehouses });
  });
  afterAll(async () => {
    await h.close();
    await warehouse.drop();
  });
  beforeEach(async () => {
    t = await h.tenant(['automations']);
  });
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
  });

  function worker(options: Partial<TaskWorkerOptions> = {}): TaskWorker {
    const created = new TaskWorker({
      dataSource: h.db.dataSource,
      warehouse: warehouse.warehouses,
      logger,
      concurrency: 2,
      pollIntervalMs: 20,
      heartbeatIntervalMs: 50,
      staleAfterMs: 60_000,
      maxAttempts: 2,
      ...options,
    });
    workers.push(created);
    created.start();
    return created;
  }

  const run = async (id: string): Promise<RunRow> =>
    (await h.db.dataSource.query('SELECT * FROM task_runs WHERE id = $1', [id]))[0];

  async function waitFor(
    id: string,
    until: (row: RunRow) => boolean | Promise<boolean>,
    timeoutMs = 10_000,
  ): Promise<RunRow> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const row = await run(id);
      if (await until(row)) return row;
      if (Date.now() > deadline) throw new Error(`run ${id} stayed ${row.status}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const finished = (row: RunRow) => row.finished_at !== null;

  async function startTask(templateId: string, params: object = {}, tenant = t): Promise<string> {
    const created = await h.as(tenant.key).post('/api/v1/tasks').send({ template_id: templateId, params });
    expect(created.status).toBe(201);
    const started = await h.as(tenant.key).post(`/api/v1/tasks/${created.body.data.task_id}/start`).send({});
    expect(started.status).toBe(202);
    return started.body.data.task_run_id as string;
  }

  async function makeApp(appType: string, displayName: string, credentials?: object): Promise<string> {
    const response = await h.as(t.key).post('/api/v1/apps').send({ appType, displayName, credentials });
    expect(response.status).toBe(201);
    return response.body.data.id as string;
  }

  describe('connector health audit', () => {
    it('reports errors, failures, stale syncs and missing credentials with fixes', async () => {
      const stripe = await makeApp('stripe', 'Stripe', { secretKey: 'sk_live_secret_value' });
      const hubspot = await makeApp('shopify', 'Shop draft');
      const amplitude = await makeApp('amplitude', 'Amplitude', { apiKey: 'amp-secret' });
      const braze = await makeApp('braze', 'Braze');
      const source = async (appId: string, syncType: string) =>
        (await h.as(t.key).post('/api/v1/sources').send({ appId, syncType })).body.data.id as string;
      const healthySource = await source(stripe, 'stripe');
      const failingSource = await source(stripe, 'stripe');
      const uncredentialedSource = await source(hubspot, 'shopify');
      const integration = async (destinationAppId: string, frequencyUnit: string) =>
        (
          await h
            .as(t.key)
            .post('/api/v1/integrations')
            .send({
              destinationAppId,
              dataType: 'customers',
              config: { global: {}, tasks: [{ task_type: 'user_attributes' }] },
              schedule: { frequencyValue: 1, frequencyUnit, rollingWindowDays: 7 },
            })
        ).body.data.id as string;
      const draftIntegration = await integration(braze, 'days');
      const neverSynced = await integration(amplitude, 'hours');

      const q = (sql: string, values: unknown[]) => h.db.dataSource.query(sql, values);
      await q(`UPDATE sources SET last_sync_at = now() - interval '1 hour' WHERE id IN ($1, $2)`, [
        healthySource,
        uncredentialedSource,
      ]);
      await q(
        `UPDATE sources SET last_sync_at = now() - interval '3 days', consecutive_failures = 4,
                last_error = '{"message": "401 from Stripe"}' WHERE id = $1`,
        [failingSource],
      );
      await q(
        `UPDATE apps SET error_message = 'token expired', consecutive_failure_count = 5 WHERE id = $1`,
        [amplitude],
      );
      await q(`UPDATE integrations SET created_at = now() - interval '5 hours' WHERE id = $1`, [neverSynced]);

      worker();
      const runId = await startTask('connector_health_audit');
      const done = await waitFor(runId, finished);
      expect(done).toMatchObject({ status: 'succeeded', attempts: 1, error: null, worker_id: null });
      expect(done.started_at!.getTime()).toBeLessThanOrEqual(done.finished_at!.getTime());
      expect(done.progress).toMatchObject({ completedSteps: 5, totalSteps: 5 });
      expect(done.progress.steps.map((s) => s.status)).toEqual(Array(5).fill('succeeded'));

      const report = done.result as {
        kind: string;
        checked: object;
        healthy: object;
        summary: object;
        findings: Finding[];
      };
      expect(report.kind).toBe('connector_health_audit');
      expect(report.checked).toEqual({ apps: 4, sources: 3, integrations: 2 });
      const codes = (id: string) =>
        report.findings
          .filter((f) => f.resource.id === id)
          .map((f) => f.code)
          .sort();
      expect(codes(stripe)).toEqual([]);
      expect(codes(healthySource)).toEqual([]);
      expect(codes(hubspot)).toEqual(['missing_credentials']);
      expect(codes(amplitude)).toEqual(['app_error', 'consecutive_failures']);
      expect(codes(braze)).toEqual(['missing_credentials']);
      expect(codes(failingSource)).toEqual(['consecutive_failures', 'stale_sync', 'sync_error']);
      expect(codes(uncredentialedSource)).toEqual(['missing_credentials']);
      expect(codes(draftIntegration)).toEqual(['missing_credentials']);
      expect(codes(neverSynced)).toEqual(['stale_sync']);
      expect(report.findings.find((f) => f.resource.id === neverSynced)?.message).toMatch(/never synced/);
      expect(report.findings.find((f) => f.resource.id === hubspot)).toMatchObject({
        severity: 'critical',
        recommendation: expect.stringContaining(`/api/v1/apps/${hubspot}`),
      });
      expect(report.healthy).toEqual({ apps: 1, sources: 1, integrations: 0 });
      expect(report.summary).toEqual({ critical: 8, warning: 2, info: 0 });
      // Critical findings first.
      expect(report.findings[0]?.severity).toBe('critical');
      expect(JSON.stringify(report)).not.toMatch(/sk_live_secret_value|amp-secret|ciphertext/);
    });

    it('succeeds with an empty report for an account without connectors', async () => {
      worker();
      const done = await waitFor(await startTask('connector_health_audit'), finished);
      expect(done.status).toBe('succeeded');
      expect(done.result).toMatchObject({ checked: { apps: 0, sources: 0, integrations: 0 }, findings: [] });
    });
  });

  describe('warehouse freshness check', () => {
    it('reports fresh, stale, empty and missing tables', async () => {
      const now = Date.now();
      await warehouse.seed(t.accountId, [
        trackRow({ name: 'signed_up', at: new Date(now - 2 * HOUR) }),
        trackRow({ name: 'order_completed', at: new Date(now - HOUR) }),
        userRow('u1', new Date(now - 3 * DAY)),
      ]);
      worker();
      const done = await waitFor(
        await startTask('warehouse_freshness_check', {
          max_age_hours: 12,
          tables: ['events', 'users', 'groups'],
        }),
        finished,
      );
      expect(done.status).toBe('succeeded');
      const report = done.result as {
        fresh: boolean;
        tables: Record<string, unknown>[];
        findings: Finding[];
      };
      expect(report.fresh).toBe(false);
      expect(report.tables).toEqual([
        expect.objectContaining({ table: 'events', status: 'fresh', rows: 2, rowsLast24h: 2, ageHours: 1 }),
        expect.objectContaining({ table: 'users', status: 'stale', rows: 1, rowsLast24h: 0, ageHours: 72 }),
        expect.objectContaining({ table: 'groups', status: 'empty', rows: 0, lastReceivedAt: null }),
      ]);
      expect(report.findings.map((f) => [f.code, f.resource.name])).toEqual([
        ['stale_table', 'users'],
        ['table_empty', 'groups'],
      ]);
    });

    it('reports missing tables when nothing was ever loaded', async () => {
      worker();
      const done = await waitFor(await startTask('warehouse_freshness_check'), finished);
      expect(done.status).toBe('succeeded');
      const report = done.result as { tables: { status: string }[]; summary: object };
      expect(report.tables.map((x) => x.status)).toEqual(['missing', 'missing', 'missing', 'missing']);
      expect(report.summary).toEqual({ critical: 0, warning: 4, info: 0 });
    });
  });

  describe('tracking-plan audit', () => {
    it('lists events and property types in the window, with drift, naming and duplicate problems', async () => {
      const now = Date.now();
      await warehouse.seed(t.accountId, [
        trackRow({
          name: 'order_completed',
          properties: { total: 10.5, currency: 'EUR' },
          at: new Date(now - DAY),
        }),
        trackRow({
          name: 'order_completed',
          properties: { total: '12.00', currency: 'EUR' },
          at: new Date(now - DAY),
        }),
        trackRow({
          name: 'order_completed',
          properties: { total: 3, currency: null },
          at: new Date(now - HOUR),
        }),
        trackRow({ name: 'Order Completed', properties: { total: 1 }, at: new Date(now - HOUR) }),
        trackRow({ name: 'signup', properties: { planName: 'pro' }, at: new Date(now - 2 * DAY) }),
        trackRow({ name: 'Home', type: 'page', properties: { path: '/' }, at: new Date(now - HOUR) }),
        // Outside the window: never reported.
        trackRow({ name: 'OldEvent', properties: { x: 1, y: 'a' }, at: new Date(now - 30 * DAY) }),
      ]);
      worker();
      const done = await waitFor(await startTask('tracking_plan_audit', { days: 7 }), finished);
      expect(done.status).toBe('succeeded');
      const report = done.result as {
        events: {
          type: string;
          name: string;
          count: number;
          properties: Record<string, Record<string, number>>;
        }[];
        summary: Record<string, number>;
        findings: Finding[];
      };
      expect(report.events.map((e) => [e.type, e.name, e.count])).toEqual([
        ['track', 'order_completed', 3],
        ['page', 'Home', 1],
        ['track', 'Order Completed', 1],
        ['track', 'signup', 1],
      ]);
      expect(report.events[0]?.properties).toEqual({
        total: { number: 2, string: 1 },
        currency: { string: 2, null: 1 },
      });
      expect(report.findings.map((f) => [f.severity, f.code, f.resource.name])).toEqual([
        ['critical', 'type_drift', 'order_completed.total'],
        ['warning', 'duplicate_event_name', 'order_completed / Order Completed'],
        ['warning', 'event_naming', 'Order Completed'],
        ['warning', 'property_naming', 'planName'],
      ]);
      expect(JSON.stringify(report)).not.toContain('OldEvent');
      expect(report.summary).toMatchObject({ critical: 1, warning: 3, events: 4 });
    });

    it('checks the chosen naming convention', async () => {
      await warehouse.seed(t.accountId, [
        trackRow({ name: 'orderCompleted', properties: { item_id: 'a' }, at: new Date() }),
      ]);
      worker();
      const done = await waitFor(
        await startTask('tracking_plan_audit', { naming_convention: 'camelCase' }),
        finished,
      );
      expect((done.result as { findings: Finding[] }).findings.map((f) => f.code)).toEqual([
        'property_naming',
      ]);
    });
  });

  describe('execution', () => {
    it('aborts the step of a run that is cancelled, and runs and writes nothing after', async () => {
      let reached!: () => void;
      const atStep = new Promise<void>((resolve) => (reached = resolve));
      let aborted = false;
      const executed: string[] = [];
      const w = worker({
        beforeStep: async (_run, stepId, signal) => {
          executed.push(stepId);
          if (stepId !== 'check_sources') return;
          reached();
          await new Promise<void>((resolve) => {
            signal.addEventListener('abort', () => {
              aborted = true;
              resolve();
            });
          });
        },
      });
      const runId = await startTask('connector_health_audit');
      await atStep;
      const running = await run(runId);
      expect(running.status).toBe('running');
      expect(running.progress.steps.map((s) => s.status)).toEqual([
        'succeeded',
        'succeeded',
        'running',
        'pending',
        'pending',
      ]);
      const taskId = (await h.db.dataSource.query('SELECT task_id FROM task_runs WHERE id = $1', [runId]))[0]
        .task_id;
      const response = await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`);
      expect(response.body.data).toEqual({ cancelled: true, task_run_id: runId });
      await waitFor(runId, () => aborted);
      // stop() resolves once every execution it holds has returned: after it, no step can start.
      await w.stop();
      expect(executed).toEqual(['load_inventory', 'check_apps', 'check_sources']);
      expect(await run(runId)).toMatchObject({
        status: 'cancelled',
        result: null,
        worker_id: null,
        error: { code: 'cancelled' },
      });
    });

    it('cancels the warehouse query of a cancelled run on the server', async () => {
      await warehouse.seed(t.accountId, [trackRow({ name: 'signed_up', at: new Date() })]);
      const lock = new Client({ connectionString: warehouse.url });
      await lock.connect();
      try {
        await lock.query('BEGIN');
        await lock.query(`LOCK TABLE "${warehouseSchemaFor(t.accountId)}".events IN ACCESS EXCLUSIVE MODE`);
        worker();
        const runId = await startTask('warehouse_freshness_check');
        await waitFor(
          runId,
          (r) => (r.progress as { currentStep?: string }).currentStep === 'measure_tables',
        );
        const waiting = async () =>
          Number(
            (
              await lock.query(
                "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
              )
            ).rows[0].n,
          );
        // The step is recorded before its query is sent: wait for the query to wait on the lock.
        await waitFor(runId, async () => (await waiting()) === 1);
        expect(await waiting()).toBe(1);
        const taskId = (
          await h.db.dataSource.query('SELECT task_id FROM task_runs WHERE id = $1', [runId])
        )[0].task_id;
        await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`).expect(200);
        await waitFor(runId, async () => (await waiting()) === 0);
        expect(await waiting()).toBe(0);
        expect(await run(runId)).toMatchObject({ status: 'cancelled', result: null });
      } finally {
        await lock.query('ROLLBACK');
        await lock.end();
      }
    });

    it('never gives one run to two workers', async () => {
      const seen = new Map<string, string[]>();
      const options = {
        concurrency: 3,
        beforeStep: async (r: { id: string }, stepId: string) => {
          if (stepId === 'load_inventory') seen.set(r.id, [...(seen.get(r.id) ?? []), 'x']);
          await new Promise((resolve) => setTimeout(resolve, 5));
        },
      };
      const runIds = await Promise.all(Array.from({ length: 12 }, () => startTask('connector_health_audit')));
      const a = worker({ ...options, workerId: 'worker-a' });
      const b = worker({ ...options, workerId: 'worker-b' });
      const rows = await Promise.all(runIds.map((id) => waitFor(id, finished)));
      expect(rows.map((r) => [r.status, r.attempts])).toEqual(Array(12).fill(['succeeded', 1]));
      expect([...seen.values()].map((claims) => claims.length)).toEqual(Array(12).fill(1));
      expect(seen.size).toBe(12);
      expect(a.workerId).not.toBe(b.workerId);
    });

    it('retries a run whose worker crashed mid-run, on another worker after its heartbeat went stale', async () => {
      // Worker A has its own connection pool, like another process. It holds the run at a step,
      // then "crashes": its pool is destroyed, so it can no longer write anything.
      const crashedDb = createDataSource({ url: h.db.url, poolMax: 2 });
      await crashedDb.initialize();
      let reached!: () => void;
      const atStep = new Promise<void>((resolve) => (reached = resolve));
      const a = new TaskWorker({
        dataSource: crashedDb,
        warehouse: warehouse.warehouses,
        logger,
        workerId: 'crashing-worker',
        concurrency: 1,
        pollIntervalMs: 20,
        heartbeatIntervalMs: 50,
        staleAfterMs: 400,
        maxAttempts: 2,
        beforeStep: async (_run, stepId) => {
          if (stepId === 'check_sources') {
            reached();
            await new Promise(() => undefined);
          }
        },
      });
      a.start();
      const runId = await startTask('connector_health_audit');
      await atStep;
      await crashedDb.destroy();
      await a.stop();
      const stuck = await run(runId);
      expect(stuck).toMatchObject({ status: 'running', worker_id: 'crashing-worker', attempts: 1 });

      // The restarted worker reaps the run once its heartbeat is stale, then executes it.
      worker({ workerId: 'restarted-worker', staleAfterMs: 400 });
      const done = await waitFor(runId, finished);
      expect(done).toMatchObject({ status: 'succeeded', attempts: 2, worker_id: null });
      expect(done.progress.completedSteps).toBe(5);
      expect(done.result).toMatchObject({ kind: 'connector_health_audit' });
    });

    it('fails a run lost more often than the attempts allow, with worker_lost', async () => {
      const runId = await startTask('connector_health_audit');
      await h.db.dataSource.query(
        `UPDATE task_runs SET status = 'running', worker_id = 'dead', attempts = 2, started_at = now(),
                heartbeat_at = now() - interval '1 hour' WHERE id = $1`,
        [runId],
      );
      const reaper = new TaskWorker({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        logger,
        concurrency: 1,
        pollIntervalMs: 20,
        heartbeatIntervalMs: 50,
        staleAfterMs: 1000,
        maxAttempts: 2,
      });
      const reaped = await reaper.reap();
      expect(reaped.failed).toContain(runId);
      expect(await run(runId)).toMatchObject({
        status: 'failed',
        error: { code: 'worker_lost' },
        worker_id: null,
      });
      // A fresh heartbeat is never reaped.
      const other = await startTask('tracking_plan_audit');
      await h.db.dataSource.query(
        `UPDATE task_runs SET status = 'running', worker_id = 'alive', attempts = 1, started_at = now(), heartbeat_at = now() WHERE id = $1`,
        [other],
      );
      expect((await reaper.reap()).requeued).not.toContain(other);
      expect((await run(other)).status).toBe('running');
    });

    it('puts its runs back in the queue when it stops (graceful shutdown)', async () => {
      let reached!: () => void;
      const atStep = new Promise<void>((resolve) => (reached = resolve));
      const a = new TaskWorker({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        logger,
        concurrency: 1,
        pollIntervalMs: 20,
        heartbeatIntervalMs: 50,
        staleAfterMs: 60_000,
        maxAttempts: 2,
        beforeStep: async (_run, stepId) => {
          if (stepId === 'check_apps') {
            reached();
            await new Promise(() => undefined);
          }
        },
      });
      a.start();
      const runId = await startTask('connector_health_audit');
      await atStep;
      await a.stop();
      expect(await run(runId)).toMatchObject({ status: 'pending', worker_id: null, attempts: 0 });
      worker();
      expect(await waitFor(runId, finished)).toMatchObject({ status: 'succeeded', attempts: 1 });
    });

    it('fails a run whose step throws internally with the step, internal_error and a reference; the text only in the logs', async () => {
      const lines: string[] = [];
      const stream = new PassThrough();
      stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
      const raw =
        'password authentication failed for user "warehouse_reader" (connect ECONNREFUSED 10.0.3.7:5432)';
      worker({
        logger: createLogger({ service: 'task-worker-test', level: 'error', stream }),
        beforeStep: async (_run, stepId) => {
          if (stepId === 'measure_tables') throw new Error(raw);
        },
      });
      const runId = await startTask('warehouse_freshness_check');
      const done = await waitFor(runId, finished);
      expect(done).toMatchObject({
        status: 'failed',
        result: null,
        error: {
          code: 'internal_error',
          step: 'measure_tables',
          message: expect.stringMatching(/^An internal error occurred; reference [0-9a-f]{12}$/),
        },
      });
      expect(JSON.stringify(done.error)).not.toMatch(/warehouse_reader|ECONNREFUSED|10\.0\.3\.7|password/);
      expect(done.progress.steps.map((s) => s.status)).toEqual(['succeeded', 'failed', 'pending']);
      const logged = lines
        .map(
          (line) =>
            JSON.parse(line) as { message: string; runId?: string; reference?: string; detail?: string },
        )
        .find((entry) => entry.runId === runId && entry.message === 'task run failed');
      expect(logged).toMatchObject({ detail: raw, accountId: t.accountId });
      expect(done.error!.message).toBe(`An internal error occurred; reference ${logged!.reference}`);
    });

    it("fails a run whose step throws a documented error with that error's code and message", async () => {
      worker({
        beforeStep: async (_run, stepId) => {
          if (stepId === 'measure_tables')
            throw new AppError(503, 'warehouse_unavailable', 'The warehouse is unavailable; try again later');
        },
      });
      const done = await waitFor(await startTask('warehouse_freshness_check'), finished);
      expect(done.error).toEqual({
        code: 'warehouse_unavailable',
        step: 'measure_tables',
        message: 'The warehouse is unavailable; try again later',
      });
    });
  });
});
