import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import request from 'supertest';
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
import { startScratchWarehouse, trackRow, type ScratchWarehouse } from '../testing/warehouse';

// The built control plane, as operators run it, with its in-process worker: SIGKILLed while a
// run is mid-step, the run is retried by the restarted process once its heartbeat is stale;
// SIGTERMed, the process puts its run back in the queue and exits cleanly. A run is held
// mid-step by a lock on the warehouse table its step reads: no test hook in the process.

interface RunRow {
  status: string;
  attempts: number;
  worker_id: string | null;
  progress: { currentStep: string | null };
  result: { tables: { table: string; status: string; rows: number }[] } | null;
}

describe('the control plane process: task runs survive a crash (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  let warehouse: ScratchWarehouse;
  let lock: Client;
  let key: string;
  let accountId: string;
  const processes: ChildProcess[] = [];
  // The same keys for every start, as a deployment keeps them: the restarted process opens the
  // warehouse password the first one sealed.
  const credentialKeys = `k1:${randomBytes(32).toString('base64')}`;
  const ingestionToken = randomBytes(24).toString('hex');

  const env = (port: number) => ({
    ...process.env,
    DATABASE_URL: db.url,
    WAREHOUSE_URL: warehouse.url,
    CREDENTIALS_ENCRYPTION_KEYS: credentialKeys,
    INTERNAL_TOKEN_INGESTION: ingestionToken,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    DEAD_LETTER_INDEX_ENABLED: 'false',
    TASK_WORKER_POLL_INTERVAL_MS: '100',
    TASK_RUN_HEARTBEAT_INTERVAL_MS: '100',
    TASK_RUN_STALE_AFTER_MS: '1500',
    // A bound, not a claim: generous, so a loaded machine does not turn a clean stop into exit 1.
    SHUTDOWN_TIMEOUT_MS: '60000',
  });

  const startControlPlane = () => startControlPlaneProcess(env, processes);

  const run = async (id: string): Promise<RunRow> =>
    (await db.dataSource.query('SELECT * FROM task_runs WHERE id = $1', [id]))[0];

  async function startRun(base: string): Promise<string> {
    const created = await request(base)
      .post('/api/v1/tasks')
      .set('Authorization', `Bearer ${key}`)
      .send({ template_id: 'warehouse_freshness_check' });
    expect(created.status).toBe(201);
    const started = await request(base)
      .post(`/api/v1/tasks/${created.body.data.task_id}/start`)
      .set('Authorization', `Bearer ${key}`);
    expect(started.status).toBe(202);
    return started.body.data.task_run_id as string;
  }

  /** Holds every reader of the account's events table until the returned function is called. */
  async function holdEvents(): Promise<() => Promise<void>> {
    await lock.query('BEGIN');
    await lock.query(`LOCK TABLE "${warehouseSchemaFor(accountId)}".events IN ACCESS EXCLUSIVE MODE`);
    return async () => {
      await lock.query('COMMIT');
    };
  }

  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('task worker process');
    warehouse = await startScratchWarehouse('task worker process warehouse');
    const account = await new AccountService(db.dataSource).create('Crash test', ['automations']);
    accountId = account.id;
    key = (await new ApiKeyService(db.dataSource).issue(account.id, 'test', [...scopes])).apiKey;
    await warehouse.seed(accountId, [trackRow({ name: 'signed_up', at: new Date() })]);
    lock = new Client({ connectionString: warehouse.url });
    await lock.connect();
  });
  afterAll(async () => {
    killAll(processes);
    await lock?.end();
    await warehouse?.drop();
    await db?.drop();
  });

  // Bounded generously: two process starts, a stale heartbeat and a clean stop take minutes
  // on a loaded machine (tools/flaky.sh).
  it('retries a run whose process was killed mid-step, after a restart', async () => {
    const release = await holdEvents();
    const first = await startControlPlane();
    const runId = await startRun(first.base);
    await until(async () => (await run(runId)).progress.currentStep === 'measure_tables', 60_000);
    const held = await run(runId);
    expect(held).toMatchObject({ status: 'running', attempts: 1 });

    // The process's connections carry its name: otherwise untilDisconnected would pass at once.
    expect(await connectionsOf(db.dataSource, first.applicationName)).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    await exited(first.child);
    await untilDisconnected(db.dataSource, first.applicationName);
    expect(await run(runId)).toMatchObject({ status: 'running', worker_id: held.worker_id });
    await release();

    const second = await startControlPlane();
    await until(async () => (await run(runId)).status === 'succeeded', 60_000);
    const done = await run(runId);
    expect(done).toMatchObject({ status: 'succeeded', attempts: 2, worker_id: null });
    expect(done.result?.tables.find((t) => t.table === 'events')).toMatchObject({ status: 'fresh', rows: 1 });

    // SIGTERM mid-step: the run goes back to the queue at once and the process exits cleanly.
    const releaseAgain = await holdEvents();
    const next = await startRun(second.base);
    await until(async () => (await run(next)).progress.currentStep === 'measure_tables', 60_000);
    second.child.kill('SIGTERM');
    expect({ code: await exited(second.child), stderr: second.stderr() }).toEqual({
      code: 0,
      stderr: expect.any(String),
    });
    expect(await run(next)).toMatchObject({ status: 'pending', worker_id: null, attempts: 0 });
    await releaseAgain();
  }, 240_000);
});
