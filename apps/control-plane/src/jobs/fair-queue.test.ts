import { PassThrough } from 'node:stream';
import {
  startHoldingProxy,
  startShopifyLookAlike,
  startStripeLookAlike,
  type HoldingProxy,
  type SourceLookAlike,
} from '@pipeline/connectors/testing';
import { createLogger } from '@pipeline/logger';
import { CredentialCipher } from '../apps/credential-cipher';
import { SourceSyncExecutor } from '../sources/source-sync-executor';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { waitUntil } from '../testing/wait';
import { TaskWorker } from '../tasks/task-worker';
import { JobRunner } from './job-runner';

const SLOW_JOBS = 50;

interface JobRow {
  id: string;
  account_id: string;
  status: string;
  started_at: Date | null;
}

// Account A queues 50 syncs against a vendor that holds every request (a slow vendor); account
// B queues one sync after them against a vendor that answers. With a first-in-first-out queue
// A's syncs hold every worker and B's waits for all 50.
describe('job queue fairness across accounts (real PostgreSQL, held Stripe, Shopify look-alike)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let stripe: SourceLookAlike;
  let slowStripe: HoldingProxy;
  let shopify: SourceLookAlike;
  let runners: JobRunner[] = [];
  let a: Tenant;
  let b: Tenant;

  const logger = () =>
    createLogger({ service: 'fair-queue-test', stream: new PassThrough(), level: 'error' });

  function startRunner(concurrency: number, maxRunningPerAccount?: number): JobRunner {
    const runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: logger(),
      concurrency,
      ...(maxRunningPerAccount === undefined ? {} : { maxRunningPerAccount }),
      pollIntervalMs: 25,
      heartbeatIntervalMs: 200,
      staleAfterMs: 60_000,
      maxAttempts: 3,
      retryBaseMs: 100,
      retryMaxMs: 1_000,
    }).register(
      new SourceSyncExecutor({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
        logger: logger(),
        baseUrls: { stripe: slowStripe.url, shopify: shopify.url },
        http: { attempts: 1, minDelayMs: 5, timeoutMs: 60_000 },
      }),
    );
    runner.start();
    runners.push(runner);
    return runner;
  }

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('fair queue warehouse');
    h = await startHarness('fair queue');
    stripe = await startStripeLookAlike();
    shopify = await startShopifyLookAlike();
  });

  beforeEach(async () => {
    slowStripe = await startHoldingProxy(stripe.url);
    a = await h.tenant();
    b = await h.tenant();
  });

  afterEach(async () => {
    slowStripe.release();
    await Promise.all(runners.map((r) => r.stop()));
    runners = [];
    await slowStripe.close();
    // Jobs stopped mid-sync go back to the queue; later tests start from an empty one.
    await h.db.dataSource.query(`UPDATE jobs SET status = 'cancelled' WHERE status IN ('queued', 'running')`);
  });

  afterAll(async () => {
    await stripe.close();
    await shopify.close();
    await h.close();
    await warehouse.drop();
  });

  async function appOf(tenant: Tenant, appType: string, credentials: object, config: object = {}) {
    const response = await h
      .as(tenant.key)
      .post('/api/v1/apps')
      .send({ appType, displayName: `${appType} ${Math.random()}`, credentials, config });
    expect(response.status).toBe(201);
    return (response.body as { data: { id: string } }).data.id;
  }

  /** A source that syncs at once; returns its job's id. */
  async function syncingSource(tenant: Tenant, body: object): Promise<string> {
    const response = await h
      .as(tenant.key)
      .post('/api/v1/sources')
      .send({ ...body, runNow: true });
    expect(response.status).toBe(201);
    return (response.body as { data: { dispatchedJob: { id: string } } }).data.dispatchedJob.id;
  }

  /** A's 50 Stripe syncs (held by the vendor), queued before anything runs. */
  async function queueSlowJobs(): Promise<string[]> {
    const app = await appOf(a, 'stripe', { secretKey: stripe.secret });
    const ids: string[] = [];
    for (let i = 0; i < SLOW_JOBS; i += 1)
      ids.push(await syncingSource(a, { appId: app, syncType: 'stripe', importTasks: ['customers'] }));
    return ids;
  }

  async function queueFastJob(): Promise<string> {
    const app = await appOf(b, 'shopify', { accessToken: shopify.secret }, { shop: 'look-alike' });
    return syncingSource(b, { appId: app, syncType: 'shopify', importTasks: ['products'] });
  }

  const jobs = async (accountId: string): Promise<JobRow[]> =>
    (await h.db.dataSource.query(
      'SELECT id, account_id, status, started_at FROM jobs WHERE account_id = $1',
      [accountId],
    )) as JobRow[];

  const count = (rows: JobRow[], status: string) => rows.filter((r) => r.status === status).length;

  it('runs B’s sync while A’s 50 slow syncs hold their share and the rest of them wait, on two replicas', async () => {
    await queueSlowJobs();
    // Two replicas of 2 workers each, at most 2 running jobs per account across both.
    startRunner(2, 2);
    startRunner(2, 2);
    await waitUntil(
      'A has 2 syncs held by the vendor',
      async () => (slowStripe.held() >= 2 ? true : undefined),
      5_000,
    );
    const fastJob = await queueFastJob();
    let maxRunningOfA = 0;
    const done = await waitUntil(
      'B’s sync succeeds',
      async () => {
        const rows = await jobs(a.accountId);
        maxRunningOfA = Math.max(maxRunningOfA, count(rows, 'running'));
        const [job] = (await jobs(b.accountId)).filter((r) => r.id === fastJob);
        return job?.status === 'succeeded' ? { job, rowsOfA: rows } : undefined;
      },
      30_000,
    );
    // Not how fast but in what order: it ran while A's syncs were still queued (the vendor holds
    // A's two running ones until the test ends, so behind them B would never have run).
    expect(count(done.rowsOfA, 'queued')).toBe(SLOW_JOBS - 2);
    expect(count(done.rowsOfA, 'running')).toBe(2);
    expect(slowStripe.held()).toBe(2);
    // The cap holds across both replicas, even with two workers idle.
    const settled = await jobs(a.accountId);
    expect(Math.max(maxRunningOfA, count(settled, 'running'))).toBe(2);
  });

  it('gives a freed worker to the account with the fewest running jobs, not the oldest job', async () => {
    await queueSlowJobs();
    // No cap: only the order decides. One replica of 2 workers, both taken by A.
    startRunner(2);
    await waitUntil(
      'A has 2 syncs held by the vendor',
      async () => (slowStripe.held() >= 2 ? true : undefined),
      5_000,
    );
    const fastJob = await queueFastJob();
    slowStripe.release();
    const started = await waitUntil(
      'B’s sync starts',
      async () => {
        const [job] = (await jobs(b.accountId)).filter((r) => r.id === fastJob);
        return job?.started_at ?? undefined;
      },
      10_000,
    );
    const rowsOfA = await jobs(a.accountId);
    // First in, first out would start all 50 of A's first. Fair: the first freed worker goes to B
    // (0 running) rather than A (1 running); a second worker freed at the same moment may take A's third.
    const startedBefore = rowsOfA.filter((r) => r.started_at !== null && r.started_at < started).length;
    expect(startedBefore).toBeGreaterThanOrEqual(2);
    expect(startedBefore).toBeLessThanOrEqual(3);
  });
});

// Task runs share the queue's claim: A's runs held mid-step by the worker's beforeStep hook,
// B's run starts on the worker A may not take.
describe('task run queue fairness across accounts (real PostgreSQL)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let worker: TaskWorker;
  const RUNS_OF_A = 6;

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('fair task queue warehouse');
    h = await startHarness('fair task queue', { warehouse: warehouse.warehouses });
  });
  afterAll(async () => {
    await worker.stop();
    await h.close();
    await warehouse.drop();
  });

  async function startRun(tenant: Tenant): Promise<string> {
    const task = await h.as(tenant.key).post('/api/v1/tasks').send({ template_id: 'connector_health_audit' });
    expect(task.status).toBe(201);
    const started = await h.as(tenant.key).post(`/api/v1/tasks/${task.body.data.task_id}/start`).send({});
    expect(started.status).toBe(202);
    return started.body.data.task_run_id as string;
  }

  it('starts B’s run within 5 s while A’s runs hold their one worker', async () => {
    const a = await h.tenant(['automations']);
    const b = await h.tenant(['automations']);
    for (let i = 0; i < RUNS_OF_A; i += 1) await startRun(a);
    const entered: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const runsOfA = new Set(
      (
        (await h.db.dataSource.query('SELECT id FROM task_runs WHERE account_id = $1', [a.accountId])) as {
          id: string;
        }[]
      ).map((r) => r.id),
    );
    worker = new TaskWorker({
      dataSource: h.db.dataSource,
      warehouse: warehouse.warehouses,
      logger: createLogger({ service: 'fair-task-test', stream: new PassThrough(), level: 'error' }),
      concurrency: 2,
      maxRunningPerAccount: 1,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 200,
      staleAfterMs: 60_000,
      maxAttempts: 2,
      beforeStep: async (run, _step, signal) => {
        if (!entered.includes(run.id)) entered.push(run.id);
        if (runsOfA.has(run.id))
          await Promise.race([held, new Promise((resolve) => signal.addEventListener('abort', resolve))]);
      },
    });
    worker.start();
    const fast = await startRun(b);
    const queuedAt = Date.now();
    const deadline = queuedAt + 5_000;
    while (!entered.includes(fast)) {
      if (Date.now() > deadline)
        throw new Error(`B's run not started within 5 s; started: ${entered.length}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const statuses = (await h.db.dataSource.query(
      'SELECT status, count(*)::int AS n FROM task_runs WHERE account_id = $1 GROUP BY status ORDER BY status',
      [a.accountId],
    )) as { status: string; n: number }[];
    expect(statuses).toEqual([
      { status: 'pending', n: RUNS_OF_A - 1 },
      { status: 'running', n: 1 },
    ]);
    release();
  });
});
