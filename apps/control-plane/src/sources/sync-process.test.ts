import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import {
  recordStripeEvent,
  startHoldingProxy,
  startStripeLookAlike,
  stripeRecords,
  type HoldingProxy,
  type SourceLookAlike,
} from '@pipeline/connectors/testing';
import { parsePrometheusText, sampleSum } from '@pipeline/destinations/testing';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { AccountService } from '../accounts/account.service';
import { ApiKeyService } from '../auth/api-key.service';
import { scopes } from '../auth/scopes';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import {
  exited,
  killAll,
  requireBuiltControlPlane,
  startControlPlaneProcess,
  connectionsOf,
  until,
  untilDisconnected,
} from '../testing/control-plane-process';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';

// The built control plane, as operators run it, with its in-process job runner: SIGKILLed
// while a sync is mid-stream, the sync is recovered by the restarted process once its
// heartbeat is stale and completes without duplicates; SIGTERMed, the process puts its sync
// back in the queue and exits cleanly. The sync is held mid-stream by a proxy in front of the
// Stripe look-alike that parks requests: no test hook in the process.

interface JobRow {
  status: string;
  attempts: number;
  worker_id: string | null;
}

describe('the control plane process: sync jobs survive a crash (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  let warehouse: ScratchWarehouse;
  let stripe: SourceLookAlike;
  let proxy: HoldingProxy;
  let key: string;
  let accountId: string;
  const processes: ChildProcess[] = [];
  const credentialKeys = `k1:${randomBytes(32).toString('base64')}`;

  const env = (port: number) => ({
    ...process.env,
    DATABASE_URL: db.url,
    WAREHOUSE_URL: warehouse.url,
    CREDENTIALS_ENCRYPTION_KEYS: credentialKeys,
    INTERNAL_TOKEN_INGESTION: randomBytes(24).toString('hex'),
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    TASK_WORKER_ENABLED: 'false',
    SCHEDULER_ENABLED: 'false',
    DEAD_LETTER_INDEX_ENABLED: 'false',
    JOB_POLL_INTERVAL_MS: '100',
    JOB_HEARTBEAT_INTERVAL_MS: '100',
    JOB_STALE_AFTER_MS: '1500',
    VENDOR_BASE_URL_STRIPE: proxy.url,
    // A bound, not a claim: generous, so a loaded machine does not turn a clean stop into exit 1.
    SHUTDOWN_TIMEOUT_MS: '60000',
  });

  const startControlPlane = () => startControlPlaneProcess(env, processes);

  const job = async (id: string): Promise<JobRow> =>
    (await db.dataSource.query('SELECT * FROM jobs WHERE id = $1', [id]))[0];

  async function trigger(base: string, sourceId: string): Promise<string> {
    const response = await request(base)
      .post(`/api/v1/sources/${sourceId}/sync`)
      .set('Authorization', `Bearer ${key}`);
    expect(response.status).toBe(202);
    return response.body.data.id as string;
  }

  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('sync process');
    warehouse = await startScratchWarehouse('sync process warehouse');
    stripe = await startStripeLookAlike();
    stripe.data.set('customers', stripeRecords('customers', 1000, Math.floor(Date.now() / 1000)));
    proxy = await startHoldingProxy(stripe.url, { holdAfter: Infinity });
    const account = await new AccountService(db.dataSource).create('Sync crash test', []);
    accountId = account.id;
    key = (await new ApiKeyService(db.dataSource).issue(account.id, 'test', [...scopes])).apiKey;
  });
  afterAll(async () => {
    killAll(processes);
    await proxy?.close();
    await stripe?.close();
    await warehouse?.drop();
    await db?.drop();
  });

  // Bounded generously: two process starts, a stale heartbeat and a clean stop take minutes
  // on a loaded machine (tools/flaky.sh).
  it('recovers a sync whose process was killed mid-stream, after a restart, without duplicates', async () => {
    const first = await startControlPlane();
    const app = await request(first.base)
      .post('/api/v1/apps')
      .set('Authorization', `Bearer ${key}`)
      .send({ appType: 'stripe', displayName: 'Stripe', credentials: { secretKey: stripe.secret } });
    expect(app.status).toBe(201);
    const source = await request(first.base)
      .post('/api/v1/sources')
      .set('Authorization', `Bearer ${key}`)
      .send({ appId: app.body.data.id, syncType: 'stripe', importTasks: ['customers'] });
    expect(source.status).toBe(201);
    const sourceId = source.body.data.id as string;

    // The credentials check and four pages go through; the fifth page waits at the proxy.
    proxy.holdAfter(5);
    const jobId = await trigger(first.base, sourceId);
    await until(async () => proxy.held() > 0, 60_000);
    const held = await job(jobId);
    expect(held).toMatchObject({ status: 'running', attempts: 1 });

    // The process's connections carry its name: otherwise untilDisconnected would pass at once.
    expect(await connectionsOf(db.dataSource, first.applicationName)).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await exited(first.child);
    proxy.release();
    await untilDisconnected(db.dataSource, first.applicationName);
    expect(await job(jobId)).toMatchObject({ status: 'running', worker_id: held.worker_id });

    const second = await startControlPlane();
    await until(async () => (await job(jobId)).status === 'succeeded', 60_000);
    expect(await job(jobId)).toMatchObject({ status: 'succeeded', attempts: 2, worker_id: null });
    const loaded = await warehouse.query<{ rows: string; ids: string }>(
      `SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM ${warehouseSchemaFor(accountId)}.stripe_customers`,
    );
    expect(loaded.rows[0]).toEqual({ rows: '1000', ids: '1000' });
    const detail = await request(second.base)
      .get(`/api/v1/sources/${sourceId}`)
      .set('Authorization', `Bearer ${key}`);
    expect(detail.body.data).toMatchObject({
      integrationStatus: 'succeeded',
      consecutiveFailures: 0,
      activeImportJobId: null,
      latestJobId: jobId,
    });
    // The process's own GET /metrics saw it: one requeue by its reaper, then the sync timed.
    const metric = async (name: string, labels: Record<string, string>) =>
      sampleSum(parsePrometheusText((await request(second.base).get('/metrics')).text), name, labels);
    await until(
      async () =>
        (await metric('pipeline_control_plane_job_duration_seconds_count', {
          kind: 'source_sync',
          outcome: 'succeeded',
        })) === 1,
      60_000,
    );
    expect(await metric('pipeline_control_plane_reaper_requeued_total', { kind: 'source_sync' })).toBe(1);

    // SIGTERM mid-stream: the sync goes back to the queue at once and the process exits cleanly.
    // It reads Stripe's events now (the cursor is saved): 250 updates are three pages of them.
    const updatedAt = Math.floor(Date.now() / 1000);
    for (const customer of stripe.data.get('customers')!.slice(0, 250))
      recordStripeEvent(stripe, 'customers', 'customer.updated', { ...customer, name: 'Updated' }, updatedAt);
    proxy.holdAfter(2);
    const next = await trigger(second.base, sourceId);
    await until(async () => proxy.held() > 0, 60_000);
    second.child.kill('SIGTERM');
    expect({ code: await exited(second.child), stderr: second.stderr() }).toEqual({
      code: 0,
      stderr: expect.any(String),
    });
    expect(await job(next)).toMatchObject({ status: 'queued', worker_id: null, attempts: 0 });
    const paused = await db.dataSource.query('SELECT integration_status FROM sources WHERE id = $1', [
      sourceId,
    ]);
    expect(paused[0]).toEqual({ integration_status: 'queued' });
    proxy.release();
  }, 240_000);
});
