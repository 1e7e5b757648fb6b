import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, trackRow, type ScratchWarehouse } from '../testing/warehouse';

describe('tasks and templates API (real PostgreSQL)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let t: Tenant;

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('tasks api warehouse');
    h = await startHarness('tasks api', { warehouse: warehouse.warehouses });
  });
  afterAll(async () => {
    await h.close();
    await warehouse.drop();
  });
  beforeEach(async () => {
    t = await h.tenant(['automations']);
  });

  const create = (body: object, key = t.key) => h.as(key).post('/api/v1/tasks').send(body);
  const runsOf = async (taskId: string) =>
    (await h.db.dataSource.query('SELECT * FROM task_runs WHERE task_id = $1 ORDER BY created_at', [
      taskId,
    ])) as { id: string; status: string; params: Record<string, unknown>; finished_at: Date | null }[];

  describe('feature gate', () => {
    it('answers every task endpoint 403 feature_not_enabled without the Automations feature', async () => {
      const gated = await h.tenant([]);
      const ours = (await create({ template_id: 'connector_health_audit' })).body.data.task_id as string;
      const calls = [
        h.as(gated.key).post('/api/v1/tasks').send({ template_id: 'connector_health_audit' }),
        h.as(gated.key).post('/api/v1/templates/connector_health_audit/precheck'),
        h.as(gated.key).post(`/api/v1/tasks/${ours}/start`).send({}),
        h.as(gated.key).post(`/api/v1/tasks/${ours}/cancel`),
      ];
      for (const response of await Promise.all(calls)) {
        expect(response.status).toBe(403);
        expect(response.headers['content-type']).toMatch(/application\/problem\+json/);
        expect(response.body).toMatchObject({ status: 403, code: 'feature_not_enabled' });
      }
      expect(
        await h.db.dataSource.query('SELECT 1 FROM tasks WHERE account_id = $1', [gated.accountId]),
      ).toEqual([]);
    });
  });

  describe('scopes', () => {
    it('needs tasks.write to create, tasks.read to precheck, tasks.manage to start and cancel', async () => {
      const taskId = (await create({ template_id: 'connector_health_audit' })).body.data.task_id as string;
      const readOnly = await t.keyWith(['tasks.read']);
      const writeOnly = await t.keyWith(['tasks.write']);
      const manageOnly = await t.keyWith(['tasks.manage']);

      const denied = await Promise.all([
        h.as(readOnly).post('/api/v1/tasks').send({ template_id: 'connector_health_audit' }),
        h.as(writeOnly).post('/api/v1/templates/connector_health_audit/precheck'),
        h.as(readOnly).post(`/api/v1/tasks/${taskId}/start`).send({}),
        h.as(writeOnly).post(`/api/v1/tasks/${taskId}/cancel`),
      ]);
      for (const response of denied) {
        expect(response.status).toBe(403);
        expect(response.body.code).toBe('insufficient_scope');
      }
      expect(
        (await h.as(writeOnly).post('/api/v1/tasks').send({ template_id: 'tracking_plan_audit' })).status,
      ).toBe(201);
      expect((await h.as(readOnly).post('/api/v1/templates/tracking_plan_audit/precheck')).status).toBe(200);
      expect((await h.as(manageOnly).post(`/api/v1/tasks/${taskId}/start`).send({})).status).toBe(202);
      expect((await h.as(manageOnly).post(`/api/v1/tasks/${taskId}/cancel`)).status).toBe(200);
    });

    it('answers 401 without a key', async () => {
      const response = await h.as('').post('/api/v1/tasks').unset('Authorization').send({ template_id: 'x' });
      expect(response.status).toBe(401);
      expect(response.body.code).toBe('unauthenticated');
    });
  });

  describe('POST /tasks', () => {
    it('answers 201 with the task id; the title defaults to the template name and defaults fill the params', async () => {
      const response = await create({ template_id: 'tracking_plan_audit', params: { days: 14 } });
      expect(response.status).toBe(201);
      expect(response.body).toEqual({ data: { task_id: expect.stringMatching(/^[0-9a-f-]{36}$/) } });
      const [task] = await h.db.dataSource.query('SELECT * FROM tasks WHERE id = $1', [
        response.body.data.task_id,
      ]);
      expect(task).toMatchObject({
        account_id: t.accountId,
        template_id: 'tracking_plan_audit',
        template_version: 1,
        title: 'Tracking plan audit',
        params: { days: 14, naming_convention: 'snake_case' },
      });
    });

    it('keeps a given title', async () => {
      const response = await create({ template_id: 'connector_health_audit', title: 'Weekly audit' });
      const [task] = await h.db.dataSource.query('SELECT title FROM tasks WHERE id = $1', [
        response.body.data.task_id,
      ]);
      expect(task.title).toBe('Weekly audit');
    });

    it('answers 422 invalid_params with each failing path', async () => {
      const response = await create({
        template_id: 'tracking_plan_audit',
        params: { days: 'seven', naming_convention: 'kebab', extra: 1 },
      });
      expect(response.status).toBe(422);
      expect(response.body).toMatchObject({ status: 422, code: 'invalid_params' });
      const paths = (response.body.errors as { path: string }[]).map((e) => e.path).sort();
      expect(paths).toEqual(['body.params.days', 'body.params.extra', 'body.params.naming_convention']);
    });

    it('names array items and ranges in the paths', async () => {
      const response = await create({
        template_id: 'warehouse_freshness_check',
        params: { tables: ['events', 'orders'], max_age_hours: 0 },
      });
      expect(response.status).toBe(422);
      const paths = (response.body.errors as { path: string }[]).map((e) => e.path).sort();
      expect(paths).toEqual(['body.params.max_age_hours', 'body.params.tables[1]']);
    });

    it('answers 422 unknown_template for a template that does not exist', async () => {
      const response = await create({ template_id: 'make_coffee' });
      expect(response.status).toBe(422);
      expect(response.body).toMatchObject({
        code: 'unknown_template',
        errors: [{ path: 'body.template_id' }],
      });
    });

    it('answers 400 validation_failed for a missing template_id, wrong types or unknown fields', async () => {
      for (const body of [{}, { template_id: 3 }, { template_id: 'connector_health_audit', colour: 'red' }]) {
        const response = await create(body);
        expect(response.status).toBe(400);
        expect(response.body.code).toBe('validation_failed');
      }
      const empty = await create({ template_id: 'connector_health_audit', title: '' });
      expect(empty.status).toBe(400);
    });
  });

  describe('POST /templates/{id}/precheck', () => {
    it('reports missing data for an empty account, and ready once the account has connectors', async () => {
      const before = await h.as(t.key).post('/api/v1/templates/connector_health_audit/precheck');
      expect(before.status).toBe(200);
      expect(before.body.data).toEqual({
        ready: false,
        gaps: [
          {
            kind: 'missing_data',
            capability: { type: 'data', name: 'connectors', appType: '' },
            hint: expect.any(String),
          },
        ],
      });
      await h.as(t.key).post('/api/v1/apps').send({ appType: 'stripe', displayName: 'Stripe' }).expect(201);
      const after = await h.as(t.key).post('/api/v1/templates/connector_health_audit/precheck');
      expect(after.body.data).toEqual({ ready: true, gaps: [] });
    });

    it('reports the web tracking integration and warehouse data, from the real state', async () => {
      const path = '/api/v1/templates/warehouse_freshness_check/precheck';
      const before = await h.as(t.key).post(path);
      expect(before.body.data.ready).toBe(false);
      expect(before.body.data.gaps).toEqual([
        {
          kind: 'missing_integration',
          capability: { type: 'integration', name: 'Web tracking (browser SDK)', appType: 'web_tracking' },
          hint: expect.stringContaining('web_tracking'),
        },
        {
          kind: 'missing_data',
          capability: { type: 'data', name: 'warehouse tables', appType: '' },
          hint: expect.any(String),
        },
      ]);
      // Web tracking has nothing to authenticate: its app is connected as soon as it exists.
      await h
        .as(t.key)
        .post('/api/v1/apps')
        .send({ appType: 'web_tracking', displayName: 'Site' })
        .expect(201);
      await warehouse.createSchema(t.accountId);
      expect((await h.as(t.key).post(path)).body.data.gaps.map((g: { kind: string }) => g.kind)).toEqual([
        'missing_data',
      ]);
      await warehouse.seed(t.accountId, [trackRow({ name: 'signed_up', at: new Date() })]);
      expect((await h.as(t.key).post(path)).body.data).toEqual({ ready: true, gaps: [] });
    });

    it("reports the calling key's missing permissions", async () => {
      await h.as(t.key).post('/api/v1/apps').send({ appType: 'stripe', displayName: 'Stripe' }).expect(201);
      const key = await t.keyWith(['tasks.read', 'sources.read']);
      const response = await h.as(key).post('/api/v1/templates/connector_health_audit/precheck');
      expect(response.body.data.ready).toBe(false);
      expect(response.body.data.gaps).toEqual([
        {
          kind: 'missing_permission',
          capability: { type: 'permission', name: 'apps.read', appType: '' },
          hint: expect.any(String),
        },
        {
          kind: 'missing_permission',
          capability: { type: 'permission', name: 'integrations.read', appType: '' },
          hint: expect.any(String),
        },
      ]);
    });

    it('answers 404 for an unknown template', async () => {
      const response = await h.as(t.key).post('/api/v1/templates/make_coffee/precheck');
      expect(response.status).toBe(404);
      expect(response.body.code).toBe('not_found');
    });
  });

  describe('POST /tasks/{id}/start and /cancel', () => {
    it('answers 202 with the run id and the effective params; the run is pending', async () => {
      const taskId = (await create({ template_id: 'tracking_plan_audit', params: { days: 3 } })).body.data
        .task_id;
      const response = await h
        .as(t.key)
        .post(`/api/v1/tasks/${taskId}/start`)
        .send({ params: { naming_convention: 'camelCase' } });
      expect(response.status).toBe(202);
      expect(response.body.data).toEqual({
        task_run_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        params: { days: 3, naming_convention: 'camelCase' },
      });
      const runs = await runsOf(taskId);
      expect(runs).toMatchObject([
        {
          id: response.body.data.task_run_id,
          status: 'pending',
          params: { days: 3, naming_convention: 'camelCase' },
        },
      ]);
    });

    it('starts without a body', async () => {
      const taskId = (await create({ template_id: 'connector_health_audit' })).body.data.task_id;
      const response = await h.as(t.key).post(`/api/v1/tasks/${taskId}/start`);
      expect(response.status).toBe(202);
      expect(response.body.data.params).toEqual({
        stale_after_intervals: 2,
        failure_threshold: 3,
        include_inactive: true,
      });
    });

    it('answers 409 task_run_active while a run is pending or running, also for simultaneous starts', async () => {
      const taskId = (await create({ template_id: 'connector_health_audit' })).body.data.task_id;
      const both = await Promise.all(
        [1, 2, 3].map(() => h.as(t.key).post(`/api/v1/tasks/${taskId}/start`).send({})),
      );
      expect(both.map((r) => r.status).sort()).toEqual([202, 409, 409]);
      expect(both.find((r) => r.status === 409)?.body).toMatchObject({
        status: 409,
        code: 'task_run_active',
      });
      await h.db.dataSource.query(
        "UPDATE task_runs SET status = 'running', worker_id = 'w', started_at = now() WHERE task_id = $1",
        [taskId],
      );
      expect((await h.as(t.key).post(`/api/v1/tasks/${taskId}/start`).send({})).status).toBe(409);
      expect(await runsOf(taskId)).toHaveLength(1);
    });

    it('validates run-time params again: 422 with the failing path', async () => {
      const taskId = (await create({ template_id: 'tracking_plan_audit' })).body.data.task_id;
      const response = await h
        .as(t.key)
        .post(`/api/v1/tasks/${taskId}/start`)
        .send({ params: { days: 0 } });
      expect(response.status).toBe(422);
      expect(response.body).toMatchObject({ code: 'invalid_params', errors: [{ path: 'body.params.days' }] });
      expect(await runsOf(taskId)).toEqual([]);
    });

    it('answers 404 for another account’s task or a malformed id', async () => {
      const other = await h.tenant(['automations']);
      const theirs = (await create({ template_id: 'connector_health_audit' }, other.key)).body.data.task_id;
      for (const path of [
        `/api/v1/tasks/${theirs}/start`,
        `/api/v1/tasks/${theirs}/cancel`,
        '/api/v1/tasks/nope/start',
      ]) {
        const response = await h.as(t.key).post(path).send({});
        expect(response.status).toBe(404);
        expect(response.body.code).toBe('not_found');
      }
    });

    it('cancels the latest active run; without one, cancelled false and a null run id', async () => {
      const taskId = (await create({ template_id: 'connector_health_audit' })).body.data.task_id;
      const none = await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`);
      expect(none.status).toBe(200);
      expect(none.body).toEqual({ data: { cancelled: false, task_run_id: null } });

      const runId = (await h.as(t.key).post(`/api/v1/tasks/${taskId}/start`).send({})).body.data.task_run_id;
      const cancelled = await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`);
      expect(cancelled.body).toEqual({ data: { cancelled: true, task_run_id: runId } });
      const [run] = await runsOf(taskId);
      expect(run).toMatchObject({ status: 'cancelled', finished_at: expect.any(Date) });

      expect((await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`)).body.data).toEqual({
        cancelled: false,
        task_run_id: null,
      });
      // A cancelled run no longer blocks a start.
      const again = await h.as(t.key).post(`/api/v1/tasks/${taskId}/start`).send({});
      expect(again.status).toBe(202);
      await h.db.dataSource.query(
        "UPDATE task_runs SET status = 'running', worker_id = 'w', started_at = now() WHERE id = $1",
        [again.body.data.task_run_id],
      );
      expect((await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`)).body.data).toEqual({
        cancelled: true,
        task_run_id: again.body.data.task_run_id,
      });
    });
  });
});
