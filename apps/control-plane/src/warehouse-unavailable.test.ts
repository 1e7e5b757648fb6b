import { createServer } from 'node:net';
import { PassThrough } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { startLookAlikeVendor, type LookAlikeServer } from '@pipeline/destinations/testing';
import { createLogger } from '@pipeline/logger';
import { DEFAULT_DATABASE_URL } from '@pipeline/postgres';
import { CredentialCipher } from './apps/credential-cipher';
import { JobRunner } from './jobs/job-runner';
import { IntegrationRunExecutor } from './integrations/integration-run-executor';
import { TaskWorker } from './tasks/task-worker';
import { isWarehouseConnectionFailure } from './warehouse-access/connection-failure';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from './testing/harness';
import { startBrazeUsersRun } from './testing/integration-fixtures';
import { accountWarehousesAt } from './testing/warehouse';
import { utcDay } from './usage/usage-metering';

const WAIT_MS = 15_000;
const logger = createLogger({
  service: 'warehouse-unavailable-test',
  level: 'error',
  stream: new PassThrough().resume(),
});

/** A port on this host that nothing listens on: bound by the kernel, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The test server's URL with another database or user: real answers of a real server. */
function serverUrlWith(change: (url: URL) => void): string {
  const url = new URL(process.env.DATABASE_URL || DEFAULT_DATABASE_URL);
  change(url);
  return url.toString();
}

const suffix = randomBytes(6).toString('hex');
const warehouses: [string, () => Promise<string>][] = [
  [
    'a database that does not exist',
    async () => serverUrlWith((url) => (url.pathname = `/no_warehouse_${suffix}`)),
  ],
  [
    'a port nothing listens on',
    async () => `postgres://postgres@127.0.0.1:${await closedPort()}/no_warehouse_${suffix}`,
  ],
  [
    'a role the server refuses (authentication failure)',
    async () => serverUrlWith((url) => (url.username = `no_role_${suffix}`)),
  ],
];

const unavailable = {
  type: 'urn:pipeline:problem:warehouse_unavailable',
  title: 'Service Unavailable',
  status: 503,
  code: 'warehouse_unavailable',
  detail: 'The warehouse cannot be reached at the moment; try again later',
};

// The control plane pointed at a warehouse it cannot use: every route and run that reads the
// warehouse answers the documented 503 warehouse_unavailable (or fails with that code), never a
// 500, and nothing of the connection (database, port, role) reaches the tenant.
describe.each(warehouses)('a warehouse at %s', (_label, urlOf) => {
  let url: string;
  let h: Harness;
  let t: Tenant;
  let reached: ReturnType<typeof accountWarehousesAt>;

  beforeAll(async () => {
    url = await urlOf();
    h = await startHarness('warehouse unavailable', { meteredWarehouseUrl: url });
    reached = accountWarehousesAt(url);
  });
  afterAll(async () => {
    await reached.close();
    await h.close();
  });
  beforeEach(async () => {
    t = await h.tenant(['automations']);
  });

  /** Nothing of where the warehouse is, or of the driver's words, in what the tenant sees. */
  const expectNothingInternal = (body: unknown) => {
    const text = JSON.stringify(body);
    const { port } = new URL(url);
    for (const secret of [suffix, `:${port}`, 'ECONNREFUSED', 'does not exist', 'authentication'])
      expect(text).not.toContain(secret);
  };

  it('answers the precheck with 503 warehouse_unavailable and Retry-After', async () => {
    const response = await h.as(t.key).post('/api/v1/templates/warehouse_freshness_check/precheck');
    expect(response.status).toBe(503);
    expect(response.headers['retry-after']).toBe('30');
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body).toMatchObject(unavailable);
    expectNothingInternal(response.body);
  });

  it('answers usage with 503 once metering could not read the warehouse, and zeros before', async () => {
    const today = utcDay(new Date());
    // Never metered: the account has no usage yet, whatever the warehouse.
    const fresh = await h.as(t.key).get('/api/v1/usage/daily?days=1');
    expect(fresh.status).toBe(200);
    expect(fresh.body.data).toEqual([
      expect.objectContaining({ date: today, storageGb: 0, totalCostUsd: 0, meteredAt: null }),
    ]);

    await expect(h.services.metering.meterDay(t.accountId, today)).rejects.toMatchObject({
      code: 'warehouse_unavailable',
    });
    for (const path of ['/api/v1/usage/summary', '/api/v1/usage/daily']) {
      const response = await h.as(t.key).get(path);
      expect(response.status).toBe(503);
      expect(response.headers['retry-after']).toBe('30');
      expect(response.body).toMatchObject(unavailable);
      expectNothingInternal(response.body);
    }
    // The metering pass over every account goes on past the failure, and records it.
    expect(await h.services.metering.meterAll(today, logger)).toBe(0);
    const [state] = (await h.db.dataSource.query(
      'SELECT failure_code FROM usage_metering_state WHERE account_id = $1',
      [t.accountId],
    )) as { failure_code: string }[];
    expect(state).toEqual({ failure_code: 'warehouse_unavailable' });
  });

  it('fails a task run with the code warehouse_unavailable, not the driver message', async () => {
    const created = await h
      .as(t.key)
      .post('/api/v1/tasks')
      .send({ template_id: 'warehouse_freshness_check', params: {} });
    expect(created.status).toBe(201);
    const taskId = created.body.data.task_id as string;
    const started = await h.as(t.key).post(`/api/v1/tasks/${taskId}/start`).send({});
    expect(started.status).toBe(202);
    const runId = started.body.data.task_run_id as string;
    const worker = new TaskWorker({
      dataSource: h.db.dataSource,
      warehouse: reached.warehouses,
      logger,
      concurrency: 1,
      pollIntervalMs: 20,
      heartbeatIntervalMs: 50,
      staleAfterMs: 60_000,
      maxAttempts: 1,
    });
    worker.start();
    try {
      const deadline = Date.now() + WAIT_MS;
      let run: { status: string; error: unknown } | undefined;
      for (;;) {
        // What tasks_get (the agent tool; there is no REST read of tasks) shows of the run.
        [run] = (await h.db.dataSource.query('SELECT status, error FROM task_runs WHERE id = $1', [
          runId,
        ])) as { status: string; error: unknown }[];
        if (run?.status === 'failed' || run?.status === 'succeeded' || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(run).toMatchObject({
        status: 'failed',
        error: { code: 'warehouse_unavailable', message: unavailable.detail, step: 'inspect_schema' },
      });
      expectNothingInternal(run);
    } finally {
      await worker.stop();
    }
  });

  describe('integration runs', () => {
    let braze: LookAlikeServer;
    let runner: JobRunner;

    beforeAll(async () => {
      braze = await startLookAlikeVendor('braze');
      runner = new JobRunner({
        dataSource: h.db.dataSource,
        logger,
        concurrency: 1,
        pollIntervalMs: 25,
        heartbeatIntervalMs: 50,
        staleAfterMs: 5_000,
        maxAttempts: 2,
        retryBaseMs: 50,
        retryMaxMs: 100,
      }).register(
        new IntegrationRunExecutor({
          regulationOf: (accountId) => h.services.regulations.service.regulationOf(accountId),
          dataSource: h.db.dataSource,
          warehouse: reached.warehouses,
          cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
          jobs: h.services.jobs,
          logger,
          baseUrls: { braze: braze.url },
          dependencyRetryMs: 200,
        }),
      );
      runner.start();
    });
    afterAll(async () => {
      await runner.stop();
      await braze.close();
    });

    it('retries, then fails the run with the code warehouse_unavailable; the integration shows it', async () => {
      const { integrationId: id, jobId } = await startBrazeUsersRun(h.as(t.key));
      const deadline = Date.now() + WAIT_MS;
      let job: { status: string; attempts: number; error: unknown } | undefined;
      for (;;) {
        job = (await h.as(t.key).get(`/api/v1/jobs/${jobId}`)).body.data;
        if (['succeeded', 'failed', 'cancelled'].includes(job!.status) || Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(job).toMatchObject({
        status: 'failed',
        attempts: 2,
        error: { code: 'warehouse_unavailable', message: unavailable.detail },
      });
      const detail = (await h.as(t.key).get(`/api/v1/integrations/${id}`)).body.data;
      expect(detail).toMatchObject({
        status: 'errored',
        lastError: { code: 'warehouse_unavailable', message: unavailable.detail },
      });
      expectNothingInternal([job, detail]);
      expect(braze.accepted).toHaveLength(0);
    });
  });
});

describe('isWarehouseConnectionFailure', () => {
  const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

  it('is true for a warehouse that cannot be used at all', () => {
    for (const error of [
      withCode('ECONNREFUSED'),
      withCode('ENOTFOUND'),
      withCode('3D000', 'database "warehouse" does not exist'),
      withCode('28P01', 'password authentication failed for user "x"'),
      withCode('28000', 'role "x" does not exist'),
      withCode('08006'),
      withCode('57P03', 'the database system is starting up'),
      withCode('53300', 'sorry, too many clients already'),
      new Error('timeout exceeded when trying to connect'),
      new Error('Connection terminated unexpectedly'),
      new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')]),
    ])
      expect([error.message, isWarehouseConnectionFailure(error)]).toEqual([error.message, true]);
  });

  it('is false for a query that failed on a reachable warehouse', () => {
    for (const error of [
      withCode('42601', 'syntax error'),
      withCode('57014', 'canceling statement due to statement timeout'),
      withCode('42P01', 'relation does not exist'),
      withCode('3F000', 'schema does not exist'),
      new Error('invalid account id for a warehouse schema'),
      'a string',
      null,
    ])
      expect(isWarehouseConnectionFailure(error)).toBe(false);
  });
});
