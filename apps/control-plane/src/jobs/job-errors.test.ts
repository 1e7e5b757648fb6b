import { randomBytes } from 'node:crypto';
import { createServer, type AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { startStripeLookAlike, stripeRecords, type SourceLookAlike } from '@pipeline/connectors/testing';
import { createLogger } from '@pipeline/logger';
import { CredentialCipher } from '../apps/credential-cipher';
import { IntegrationRunExecutor } from '../integrations/integration-run-executor';
import { SourceSyncExecutor } from '../sources/source-sync-executor';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startBrazeUsersRun } from '../testing/integration-fixtures';
import { accountWarehousesAt, startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { JobRunner } from './job-runner';

interface ShownError {
  code: string;
  message: string;
}

/** A port nothing listens on: taken from the kernel, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

// A sync that fails inside the control plane (the warehouse refuses its user or is not there;
// the credentials were sealed with a key this worker lacks) shows the tenant `internal_error`
// with a reference, never the database user, the address or the key id; the logs hold those
// under the same reference. A vendor's refusal keeps its useful message.
describe('job errors as tenants see them (real PostgreSQL, Stripe look-alike)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let stripe: SourceLookAlike;
  let t: Tenant;
  let stripeApp: string;
  const logs: string[] = [];
  const runners: JobRunner[] = [];
  const reached: ReturnType<typeof accountWarehousesAt>[] = [];

  const logger = () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    return createLogger({ service: 'job-errors-test', stream, level: 'debug' });
  };

  /**
   * A job runner whose sync executor writes to `warehouseUrl`; both executors (syncs and
   * integration runs) open credentials with `keys`.
   */
  function startRunner(warehouseUrl: string, keys = TEST_CREDENTIAL_KEYS): void {
    const syncWarehouse = accountWarehousesAt(warehouseUrl);
    reached.push(syncWarehouse);
    const cipher = new CredentialCipher(keys);
    const runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: logger(),
      concurrency: 1,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 50,
      staleAfterMs: 5_000,
      maxAttempts: 1,
      retryBaseMs: 100,
      retryMaxMs: 1_000,
    })
      .register(
        new SourceSyncExecutor({
          dataSource: h.db.dataSource,
          warehouse: syncWarehouse.warehouses,
          cipher,
          logger: logger(),
          baseUrls: { stripe: stripe.url },
          http: { attempts: 1, minDelayMs: 5 },
          flushRows: 100,
        }),
      )
      .register(
        new IntegrationRunExecutor({
          regulationOf: (accountId) => h.services.regulations.service.regulationOf(accountId),
          dataSource: h.db.dataSource,
          warehouse: warehouse.warehouses,
          cipher,
          jobs: h.services.jobs,
          logger: logger(),
          dependencyRetryMs: 200,
        }),
      );
    runners.push(runner);
    runner.start();
  }

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('job errors warehouse');
    h = await startHarness('job errors');
    stripe = await startStripeLookAlike();
    stripe.data.set('customers', stripeRecords('customers', 3, Math.floor(Date.now() / 1000) - 86_400));
    t = await h.tenant();
    const created = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType: 'stripe', displayName: 'Stripe', credentials: { secretKey: stripe.secret } });
    expect(created.status).toBe(201);
    stripeApp = (created.body as { data: { id: string } }).data.id;
  });

  afterEach(async () => {
    await Promise.all(runners.splice(0).map((r) => r.stop()));
    await Promise.all(reached.splice(0).map((w) => w.close()));
  });

  afterAll(async () => {
    await stripe.close();
    await h.close();
    await warehouse.drop();
  });

  async function syncOnce(appId: string): Promise<{ sourceId: string; jobId: string }> {
    const response = await h
      .as(t.key)
      .post('/api/v1/sources')
      .send({ appId, syncType: 'stripe', importTasks: ['customers'], runNow: true });
    expect(response.status).toBe(201);
    const data = (response.body as { data: { id: string; dispatchedJob: { id: string } } }).data;
    return { sourceId: data.id, jobId: data.dispatchedJob.id };
  }

  /** The job once it has ended, and every API answer that shows its error, as raw text too. */
  async function failedJob(sourceId: string, jobId: string) {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const job = await h.as(t.key).get(`/api/v1/jobs/${jobId}`);
      expect(job.status).toBe(200);
      const body = job.body as { data: { status: string; error: ShownError | null } };
      if (['succeeded', 'failed', 'cancelled'].includes(body.data.status)) {
        const source = await h.as(t.key).get(`/api/v1/sources/${sourceId}`);
        const list = await h.as(t.key).get(`/api/v1/sources/${sourceId}/jobs`);
        const sources = await h.as(t.key).get('/api/v1/sources');
        expect([source.status, list.status, sources.status]).toEqual([200, 200, 200]);
        return {
          job: body.data,
          lastError: (source.body as { data: { lastError: ShownError | null } }).data.lastError,
          everyAnswer: [job.text, source.text, list.text, sources.text].join('\n'),
        };
      }
      if (Date.now() > deadline) throw new Error(`job ${jobId} still ${body.data.status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  const internalError = {
    code: 'internal_error',
    message: expect.stringMatching(/^An internal error occurred; reference [0-9a-f]{12}$/),
  };

  /** The log line of the job's failure: the reference the tenant sees, and the withheld text. */
  function failureLog(jobId: string): { reference: string; detail: string; accountId: string } {
    const line = logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter((l) => l.includes(jobId) && l.includes('job failed'))
      .at(-1);
    expect(line).toBeDefined();
    return JSON.parse(line!) as { reference: string; detail: string; accountId: string };
  }

  it.each([
    {
      what: 'the warehouse refuses its database user',
      failing: async (w: ScratchWarehouse) => {
        const url = new URL(w.url);
        url.username = 'warehouse_loader_7f3a';
        return { url: url.toString(), withheld: ['role "warehouse_loader_7f3a" does not exist'] };
      },
    },
    {
      what: 'the warehouse is not listening at its address',
      failing: async () => {
        const port = await closedPort();
        return {
          url: `postgres://warehouse_loader_7f3a@127.0.0.1:${port}/warehouse_prod`,
          withheld: ['ECONNREFUSED', `127.0.0.1:${port}`],
        };
      },
    },
  ])(
    'a sync where $what shows internal_error with a reference; the detail only in the logs',
    async ({ failing }) => {
      const { url, withheld } = await failing(warehouse);
      startRunner(url);
      const { sourceId, jobId } = await syncOnce(stripeApp);
      const { job, lastError, everyAnswer } = await failedJob(sourceId, jobId);
      expect(job).toMatchObject({ status: 'failed', error: internalError });
      expect(lastError).toEqual({ ...internalError, at: expect.any(String) });
      expect(lastError!.message).toBe(job.error!.message);
      for (const text of [...withheld, 'warehouse_loader_7f3a']) expect(everyAnswer).not.toContain(text);

      const logged = failureLog(jobId);
      expect(job.error!.message).toBe(`An internal error occurred; reference ${logged.reference}`);
      expect(logged.accountId).toBe(t.accountId);
      for (const text of withheld) expect(logged.detail).toContain(text);
    },
  );

  // What a tenant can do about credentials the service's keys cannot open: enter them again.
  const credentialsUnreadable = {
    code: 'credentials_unreadable',
    message:
      'The stored credentials cannot be opened: the encryption key that sealed them is missing from this service; an operator must restore it, or the credentials must be entered again',
  };

  it('a sync whose credentials were sealed with a key this worker lacks says so, without the key id', async () => {
    // Other keys under other ids: the key id the app was sealed with (k2) is not configured here.
    const otherIds = `k8:${randomBytes(32).toString('base64')},k9:${randomBytes(32).toString('base64')}`;
    startRunner(warehouse.url, otherIds);
    const { sourceId, jobId } = await syncOnce(stripeApp);
    const { job, lastError, everyAnswer } = await failedJob(sourceId, jobId);
    expect(job).toMatchObject({ status: 'failed', error: credentialsUnreadable });
    expect(lastError).toEqual({ ...credentialsUnreadable, at: expect.any(String) });
    expect(everyAnswer).not.toMatch(/sealed with key|\bk2\b|not configured/);
  });

  it("an integration run whose destination's credentials key id is missing shows credentials_unreadable on the run and lastError", async () => {
    const otherIds = `k8:${randomBytes(32).toString('base64')}`;
    startRunner(warehouse.url, otherIds);
    const { integrationId, jobId } = await startBrazeUsersRun(h.as(t.key));

    const deadline = Date.now() + 15_000;
    let job = await h.as(t.key).get(`/api/v1/jobs/${jobId}`);
    while ((job.body as { data: { status: string } }).data.status !== 'failed') {
      if (Date.now() > deadline) throw new Error(`integration run still ${job.text}`);
      await new Promise((r) => setTimeout(r, 25));
      job = await h.as(t.key).get(`/api/v1/jobs/${jobId}`);
    }
    const integration = await h.as(t.key).get(`/api/v1/integrations/${integrationId}`);
    const runs = await h.as(t.key).get(`/api/v1/integrations/${integrationId}/jobs`);
    expect((job.body as { data: { error: ShownError } }).data.error).toEqual(credentialsUnreadable);
    expect((integration.body as { data: { lastError: ShownError } }).data.lastError).toEqual({
      ...credentialsUnreadable,
      at: expect.any(String),
    });
    expect([job.text, integration.text, runs.text].join('\n')).not.toMatch(
      /sealed with key|\bk2\b|not configured/,
    );
  });

  it("a vendor's refusal keeps its useful code and message", async () => {
    startRunner(warehouse.url);
    const bad = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType: 'stripe', displayName: 'Bad Stripe', credentials: { secretKey: 'sk_test_wrong' } });
    expect(bad.status).toBe(201);
    const { sourceId, jobId } = await syncOnce((bad.body as { data: { id: string } }).data.id);
    const { job, lastError } = await failedJob(sourceId, jobId);
    expect(job.error).toEqual({ code: 'invalid_credentials', message: 'stripe answered 401' });
    expect(lastError).toMatchObject({ code: 'invalid_credentials', message: 'stripe answered 401' });
    expect(failureLog(jobId).detail).toContain('Invalid API Key provided');
  });

  it('shows an error stored before classification without its raw text', async () => {
    const { sourceId, jobId } = await syncOnce(stripeApp);
    const raw = 'password authentication failed for user "pipeline_admin"';
    await h.db.dataSource.query(
      `UPDATE jobs SET status = 'failed', finished_at = now(), error = $2 WHERE id = $1`,
      [jobId, JSON.stringify({ code: 'internal', message: raw })],
    );
    await h.db.dataSource.query(`UPDATE sources SET last_error = $2 WHERE id = $1`, [
      sourceId,
      JSON.stringify({ code: 'internal', message: raw, at: new Date().toISOString() }),
    ]);
    const { job, lastError, everyAnswer } = await failedJob(sourceId, jobId);
    expect(job.error).toEqual({ code: 'internal_error', message: 'An internal error occurred' });
    expect(lastError).toMatchObject({ code: 'internal_error', message: 'An internal error occurred' });
    expect(everyAnswer).not.toContain('pipeline_admin');
  });
});
