import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import request from 'supertest';
import { startHarness, type Harness, type Tenant } from '../testing/harness';

interface ToolText {
  content: { type: string; text: string }[];
  isError?: boolean;
}

describe('MCP server: tasks_list and tasks_get (real PostgreSQL)', () => {
  let h: Harness;
  let server: Server;
  let url: URL;
  const clients: Client[] = [];

  beforeAll(async () => {
    h = await startHarness('mcp');
    server = h.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await new Promise((resolve) => server.close(resolve));
    await h.close();
  });

  async function connect(key: string): Promise<Client> {
    const client = new Client({ name: 'test-agent', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: `Bearer ${key}` } },
    });
    await client.connect(transport);
    clients.push(client);
    return client;
  }

  const call = async (client: Client, name: string, args: Record<string, unknown> = {}) => {
    const result = (await client.callTool({ name, arguments: args })) as ToolText;
    return { isError: result.isError ?? false, body: JSON.parse(result.content[0]?.text ?? 'null') };
  };

  async function taskWithRuns(t: Tenant, templateId: string): Promise<{ taskId: string; runIds: string[] }> {
    const taskId = (await h.as(t.key).post('/api/v1/tasks').send({ template_id: templateId })).body.data
      .task_id;
    const first = (await h.as(t.key).post(`/api/v1/tasks/${taskId}/start`).send({})).body.data.task_run_id;
    await h.as(t.key).post(`/api/v1/tasks/${taskId}/cancel`).expect(200);
    const second = (
      await h
        .as(t.key)
        .post(`/api/v1/tasks/${taskId}/start`)
        .send({ params: { failure_threshold: 9 } })
    ).body.data.task_run_id;
    return { taskId, runIds: [first, second] };
  }

  it('lists the tools', async () => {
    const t = await h.tenant(['automations']);
    const client = await connect(t.key);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['tasks_get', 'tasks_list', 'templates_list']);
  });

  it('tasks_list answers the account’s tasks only, with the latest run, paginated and filtered', async () => {
    const t = await h.tenant(['automations']);
    const other = await h.tenant(['automations']);
    await h.as(other.key).post('/api/v1/tasks').send({ template_id: 'connector_health_audit' }).expect(201);
    const { taskId, runIds } = await taskWithRuns(t, 'connector_health_audit');
    const idle = (
      await h.as(t.key).post('/api/v1/tasks').send({ template_id: 'tracking_plan_audit', title: 'Plan' })
    ).body.data.task_id;

    const client = await connect(t.key);
    const all = await call(client, 'tasks_list');
    expect(all.isError).toBe(false);
    expect(all.body.pagination).toEqual({ total: 2, limit: 20, offset: 0, nextOffset: null });
    expect(all.body.data.map((task: { task_id: string }) => task.task_id)).toEqual([idle, taskId]);
    expect(all.body.data[1]).toMatchObject({
      template_id: 'connector_health_audit',
      title: 'Connector health audit',
      latest_run: { task_run_id: runIds[1], status: 'pending', params: { failure_threshold: 9 } },
    });
    expect(all.body.data[0]).toMatchObject({ title: 'Plan', latest_run: null });

    expect((await call(client, 'tasks_list', { status: 'pending' })).body.data).toHaveLength(1);
    expect((await call(client, 'tasks_list', { status: 'never_run' })).body.data[0].task_id).toBe(idle);
    expect(
      (await call(client, 'tasks_list', { template_id: 'tracking_plan_audit' })).body.pagination.total,
    ).toBe(1);
    const page = await call(client, 'tasks_list', { limit: 1 });
    expect(page.body.pagination).toMatchObject({ total: 2, nextOffset: 1 });
  });

  it('tasks_get answers the runs with progress, results and errors; another account’s task is not found', async () => {
    const t = await h.tenant(['automations']);
    const { taskId, runIds } = await taskWithRuns(t, 'connector_health_audit');
    await h.db.dataSource.query(
      `UPDATE task_runs SET status = 'succeeded', started_at = now(), finished_at = now(),
              result = '{"kind": "connector_health_audit", "findings": []}' WHERE id = $1`,
      [runIds[1]],
    );
    const client = await connect(t.key);
    const got = await call(client, 'tasks_get', { task_id: taskId });
    expect(got.isError).toBe(false);
    expect(got.body).toMatchObject({ task_id: taskId, template_id: 'connector_health_audit' });
    expect(got.body.runs).toEqual([
      expect.objectContaining({
        task_run_id: runIds[1],
        status: 'succeeded',
        result: { kind: 'connector_health_audit', findings: [] },
        progress: expect.objectContaining({ totalSteps: 5, completedSteps: 0 }),
      }),
      expect.objectContaining({
        task_run_id: runIds[0],
        status: 'cancelled',
        error: { code: 'cancelled', message: expect.any(String) },
      }),
    ]);

    const other = await h.tenant(['automations']);
    const stranger = await connect(other.key);
    const hidden = await call(stranger, 'tasks_get', { task_id: taskId });
    expect(hidden).toEqual({
      isError: true,
      body: expect.objectContaining({ status: 404, code: 'not_found' }),
    });
    expect((await call(stranger, 'tasks_get', { task_id: 'nope' })).body.code).toBe('not_found');
  });

  it('refuses a missing key, a key without tasks.read, and an account without Automations', async () => {
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const post = (key?: string) => {
      const req = request(h.app).post('/mcp').set('Accept', 'application/json, text/event-stream');
      return (key ? req.set('Authorization', `Bearer ${key}`) : req).send(initialize);
    };
    expect((await post()).body).toMatchObject({ status: 401, code: 'unauthenticated' });
    const t = await h.tenant(['automations']);
    expect((await post(await t.keyWith(['tasks.write']))).body).toMatchObject({
      status: 403,
      code: 'insufficient_scope',
    });
    const gated = await h.tenant([]);
    expect((await post(gated.key)).body).toMatchObject({ status: 403, code: 'feature_not_enabled' });
    const ok = await post(await t.keyWith(['tasks.read']));
    expect(ok.status).toBe(200);
    expect(ok.body.result.serverInfo.name).toBe('pipeline-tasks');
    expect((await request(h.app).get('/mcp')).status).toBe(405);
    await expect(connect(gated.key)).rejects.toThrow();
  });
});
