import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type { DataSource } from 'typeorm';
import { createLogger } from '@pipeline/logger';
import { createDataSource } from '../data-model';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import { JobRunner } from '../jobs/job-runner';
import { TransientJobError, type JobExecutor } from '../jobs/job-executor';
import { retryDelayMs } from '../jobs/retry-backoff';
import { waitUntil } from '../testing/wait';
import {
  Interrupted,
  NOW,
  PgWorkQueue,
  type ClaimedItem,
  type Execution,
  type QueueHandlers,
  type QueueOptions,
  type QueueTable,
} from './pg-work-queue';

// The queue's contract, against the real PostgreSQL server with the production migrations: what
// docs/decisions/0001-work-queue.md says we keep it for. Time never passes by sleeping: a lease
// lapses by moving its heartbeat into the past, and every wait is for a condition, with a bound.

const TASK_RUNS: QueueTable = { name: 'task_runs', waitingStatus: 'pending', kindOf: "'task'" };
const dist = path.join(__dirname, '../../dist');

interface Row {
  id: string;
  account_id: string;
  status: string;
  attempts: number;
  worker_id: string | null;
  progress: Record<string, unknown>;
}

describe('PgWorkQueue contract (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  const queues: PgWorkQueue[] = [];
  const pools: DataSource[] = [];
  const children: ChildProcess[] = [];
  const logger = createLogger({ service: 'work-queue-test', stream: new PassThrough(), level: 'error' });

  function queue(
    handlers: QueueHandlers,
    overrides: Partial<QueueOptions> = {},
    dataSource: DataSource = db.dataSource,
  ): PgWorkQueue {
    const q = new PgWorkQueue(
      {
        dataSource,
        logger,
        table: TASK_RUNS,
        itemName: 'task run',
        concurrency: 1,
        pollIntervalMs: 20,
        heartbeatIntervalMs: 60_000,
        staleAfterMs: 60_000,
        maxAttempts: 3,
        ...overrides,
      },
      handlers,
    );
    queues.push(q);
    return q;
  }

  const idle: QueueHandlers = { execute: () => Promise.resolve() };

  async function account(name: string): Promise<string> {
    const [row] = (await db.dataSource.query('INSERT INTO accounts (name) VALUES ($1) RETURNING id', [
      name,
    ])) as {
      id: string;
    }[];
    if (!row) throw new Error('no account');
    return row.id;
  }

  /** Queues `count` runs of the account, each of its own task, in this order. */
  async function enqueue(accountId: string, count: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 1) {
      const [row] = (await db.dataSource.query(
        `WITH task AS (
           INSERT INTO tasks (account_id, template_id, template_version, title)
           VALUES ($1, 'contract', 1, 'contract test') RETURNING id)
         INSERT INTO task_runs (task_id, account_id, status, created_at)
         SELECT id, $1, 'pending', clock_timestamp() FROM task RETURNING id`,
        [accountId],
      )) as { id: string }[];
      if (row) ids.push(row.id);
    }
    return ids;
  }

  async function row(id: string): Promise<Row> {
    const [found] = (await db.dataSource.query('SELECT * FROM task_runs WHERE id = $1', [id])) as Row[];
    if (!found) throw new Error(`no task run ${id}`);
    return found;
  }

  /** The lease lapses now: its heartbeat moves into the past, as if its worker stopped long ago. */
  const lapse = (id: string) =>
    db.dataSource.query("UPDATE task_runs SET heartbeat_at = now() - interval '1 day' WHERE id = $1", [id]);

  /** Tracks the item and resolves with its Execution once the handler holds it (until `release`). */
  function hold(q: PgWorkQueue, item: ClaimedItem): Promise<{ execution: Execution; release: () => void }> {
    return new Promise((resolve) => {
      held.set(item.id, resolve);
      q.track(item);
    });
  }
  const held = new Map<string, (value: { execution: Execution; release: () => void }) => void>();
  const holding: QueueHandlers = {
    execute: (item, execution) =>
      new Promise<void>((release) => {
        // Stopping the queue at the end of a test interrupts it too.
        execution.signal.addEventListener('abort', () => release(), { once: true });
        held.get(item.id)?.({ execution, release });
      }),
  };

  beforeAll(async () => {
    db = await createMigratedScratchDatabase('work queue contract');
  });

  afterEach(async () => {
    for (const child of children.splice(0)) child.kill('SIGKILL');
    await Promise.all(queues.splice(0).map((q) => q.stop()));
    await db.dataSource.query('DELETE FROM task_runs');
    await db.dataSource.query('DELETE FROM tasks');
  });

  afterAll(async () => {
    await Promise.all(pools.map((p) => p.destroy()));
    await db?.drop();
  });

  it('gives each item to exactly one of many claimers racing for it', async () => {
    const accounts = await Promise.all(['a', 'b', 'c', 'd'].map((n) => account(`race ${n}`)));
    const items = (await Promise.all(accounts.map((a) => enqueue(a, 15)))).flat();
    // Their own pools, so the claims really run at once on separate connections.
    for (let i = 0; i < 2; i += 1) {
      const pool = createDataSource({ url: db.url, poolMax: 6 });
      await pool.initialize();
      pools.push(pool);
    }
    const claimers = Array.from({ length: 12 }, (_, i) =>
      queue(idle, { workerId: `racer-${i}` }, pools[i % pools.length] ?? db.dataSource),
    );
    const claims: { workerId: string; item: ClaimedItem }[] = [];
    const deadline = Date.now() + 30_000;
    await Promise.all(
      claimers.map(async (claimer) => {
        // A claim may come back empty while other claimers hold every account's lock; only an
        // empty queue ends the race.
        while (claims.length < items.length && Date.now() < deadline) {
          const item = await claimer.claim();
          if (item) claims.push({ workerId: claimer.workerId, item });
          else await new Promise((resolve) => setImmediate(resolve));
        }
      }),
    );

    expect(claims).toHaveLength(items.length);
    expect(new Set(claims.map((c) => c.item.id)).size).toBe(items.length);
    expect(new Set(claims.map((c) => c.workerId)).size).toBeGreaterThan(1);
    for (const { workerId, item } of claims) {
      expect(item.attempts).toBe(1);
      const stored = await row(item.id);
      expect(stored).toMatchObject({ status: 'running', worker_id: workerId, attempts: 1 });
    }
    expect(await claimers[0]?.claim()).toBeNull();
  });

  it('requeues an item whose lease lapsed, and the late owner can no longer write it', async () => {
    const [id] = await enqueue(await account('lease'), 1);
    const first = queue(holding, { workerId: 'first' });
    const second = queue(idle, { workerId: 'second' });
    const item = await first.claim();
    expect(item?.id).toBe(id);
    if (!item || !id) throw new Error('nothing claimed');
    const late = await hold(first, item);

    // A live lease is not taken.
    expect(await second.reap()).toEqual({ requeued: [], failed: [] });
    await lapse(id);
    expect(await second.reap()).toEqual({ requeued: [id], failed: [] });
    expect(await row(id)).toMatchObject({ status: 'pending', worker_id: null });
    expect(await second.claim()).toEqual({ id, attempts: 2 });

    await expect(late.execution.update({ progress: JSON.stringify({ by: 'first' }) })).rejects.toThrow(
      Interrupted,
    );
    expect(late.execution.signal.aborted).toBe(true);
    expect(await late.execution.settle({ status: 'succeeded', finished_at: NOW })).toBe(false);
    expect(await row(id)).toMatchObject({
      status: 'running',
      worker_id: 'second',
      attempts: 2,
      progress: {},
    });
    late.release();
  });

  it('fences a late write by the claim, even when the same worker claimed the item again', async () => {
    const [id] = await enqueue(await account('same worker'), 1);
    const worker = queue(holding, { workerId: 'same' });
    const item = await worker.claim();
    if (!item || !id) throw new Error('nothing claimed');
    const late = await hold(worker, item);
    await lapse(id);
    expect((await worker.reap()).requeued).toEqual([id]);
    expect(await worker.claim()).toEqual({ id, attempts: 2 });

    await expect(late.execution.update({ progress: JSON.stringify({ attempt: 1 }) })).rejects.toThrow(
      Interrupted,
    );
    expect(await row(id)).toMatchObject({ status: 'running', worker_id: 'same', attempts: 2, progress: {} });
    late.release();
  });

  it('fails an item instead of requeueing it once its worker was lost maxAttempts times', async () => {
    const [id] = await enqueue(await account('lost twice'), 1);
    const q = queue(idle, { maxAttempts: 2 });
    for (let attempt = 1; attempt <= 2; attempt += 1) {
      expect(await q.claim()).toEqual({ id, attempts: attempt });
      if (id) await lapse(id);
      expect(await q.reap()).toEqual(
        attempt < 2 ? { requeued: [id], failed: [] } : { requeued: [], failed: [id] },
      );
    }
    expect(await row(id ?? '')).toMatchObject({ status: 'failed', worker_id: null, attempts: 2 });
  });

  it('aborts a running execution when its item is cancelled, and its settle lands nothing', async () => {
    const [id] = await enqueue(await account('cancel'), 1);
    let settled: boolean | undefined;
    let reason: unknown;
    const q = queue(
      {
        execute: async (_item, execution) => {
          // Work that only the abort signal ends: a cancel must reach it.
          reason = await new Promise((resolve) =>
            execution.signal.addEventListener('abort', () => resolve(execution.signal.reason), {
              once: true,
            }),
          );
          settled = await execution.settle({ status: 'succeeded', finished_at: NOW });
        },
      },
      { heartbeatIntervalMs: 25 },
    );
    q.start();
    await waitUntil('the claim', async () => (await row(id ?? '')).status === 'running');
    // As TaskService.cancel does it.
    await db.dataSource.query(
      `UPDATE task_runs SET status = 'cancelled', cancel_requested_at = now(), finished_at = now(),
              worker_id = NULL, heartbeat_at = NULL WHERE id = $1`,
      [id],
    );
    await waitUntil('the execution to stop', async () => settled !== undefined);
    expect(reason).toBeInstanceOf(Interrupted);
    expect((reason as Interrupted).reason).toBe('lost');
    expect(settled).toBe(false);
    expect(await row(id ?? '')).toMatchObject({ status: 'cancelled', worker_id: null });
  });

  it('claims in a fair order: the account with the fewest running items first, up to its cap', async () => {
    const big = await account('big backlog');
    const small = await account('one item');
    const bigItems = await enqueue(big, 5);
    const [smallItem] = await enqueue(small, 1);
    const q = queue(idle, { maxRunningPerAccount: 2 });

    const order: (string | undefined)[] = [];
    for (let i = 0; i < 4; i += 1) order.push((await q.claim())?.id);
    // The small account's item, queued after all five, is claimed second, not sixth; the big
    // account stops at its cap of two running items.
    expect(order).toEqual([bigItems[0], smallItem, bigItems[1], undefined]);
  });

  it('retries a transient failure after the backoff held in run_after, doubling per attempt', async () => {
    const accountId = await account('retry');
    const [job] = (await db.dataSource.query(
      `WITH app AS (
         INSERT INTO apps (account_id, app_type, display_name, role, state)
         VALUES ($1, 'stripe', 'Stripe', '{source}', 'active') RETURNING id),
       source AS (
         INSERT INTO sources (account_id, app_id, sync_type, sync_frequency_value, sync_frequency_unit,
                              sync_anchor_time, sync_anchor_timezone, rolling_period_days, state,
                              integration_status)
         SELECT $1, id, 'stripe', 1, 'days', '00:00', 'UTC', 1, 'active', 'pending' FROM app RETURNING id)
       INSERT INTO jobs (account_id, source_id, kind, trigger, status)
       SELECT $1, id, 'source_sync', 'manual', 'queued' FROM source RETURNING id`,
      [accountId],
    )) as { id: string }[];
    const jobId = job?.id ?? '';
    const backoff = { retryBaseMs: 3_600_000, retryMaxMs: 4 * 3_600_000 };
    const failing: JobExecutor = {
      kind: 'source_sync',
      execute: () => Promise.reject(new TransientJobError('vendor_unavailable', 'The vendor answered 503')),
      onTransition: () => Promise.resolve(),
    };
    const runner = new JobRunner({
      dataSource: db.dataSource,
      logger,
      concurrency: 1,
      pollIntervalMs: 20,
      heartbeatIntervalMs: 60_000,
      staleAfterMs: 60_000,
      maxAttempts: 3,
      ...backoff,
    }).register(failing);
    const jobRow = async () =>
      (
        (await db.dataSource.query('SELECT status, attempts, run_after FROM jobs WHERE id = $1', [
          jobId,
        ])) as {
          status: string;
          attempts: number;
          run_after: Date;
        }[]
      )[0];
    // Taken before the failure can happen: the run-at is bounded by it and by the time it is seen.
    let before = Date.now();
    try {
      for (const attempt of [1, 2]) {
        if (attempt === 1) runner.start();
        else runner.wake();
        const retried = await waitUntil(`retry ${attempt}`, async () => {
          const current = await jobRow();
          return current?.status === 'queued' && current.attempts === attempt && current;
        });
        const after = Date.now();
        // The run-at the runner computed, not a measured wait: within the base × 2^(attempt-1)
        // after the failure, which happened between `before` and `after`.
        const delay = retryDelayMs(attempt, backoff);
        expect(delay).toBe(backoff.retryBaseMs * 2 ** (attempt - 1));
        expect(retried.run_after.getTime()).toBeGreaterThanOrEqual(before + delay);
        expect(retried.run_after.getTime()).toBeLessThanOrEqual(after + delay);
        // Not claimable before its run-at; the clock is moved, not waited for.
        const probe = new PgWorkQueue(
          {
            dataSource: db.dataSource,
            logger,
            table: {
              name: 'jobs',
              waitingStatus: 'queued',
              claimableWhen: 'run_after <= now()',
              kindOf: 'kind',
            },
            itemName: 'job',
            concurrency: 1,
            pollIntervalMs: 20,
            heartbeatIntervalMs: 60_000,
            staleAfterMs: 60_000,
            maxAttempts: 3,
          },
          idle,
        );
        expect(await probe.claim()).toBeNull();
        before = Date.now();
        await db.dataSource.query("UPDATE jobs SET run_after = now() - interval '1 second' WHERE id = $1", [
          jobId,
        ]);
      }
    } finally {
      await runner.stop();
    }
  });

  it('loses no item when its worker process is SIGKILLed: it is claimed again after its lease', async () => {
    const worker = path.join(dist, 'work-queue/pg-work-queue.js');
    if (!existsSync(worker))
      throw new Error('build apps/control-plane first: pnpm exec nx build control-plane');
    const [id] = await enqueue(await account('killed worker'), 1);
    // A real process with the built queue: it claims, heartbeats, and never finishes.
    const source = `
      const { DataSource } = require('typeorm');
      const { PgWorkQueue } = require(${JSON.stringify(worker)});
      const quiet = { info() {}, warn() {}, error() {} };
      const dataSource = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL });
      dataSource.initialize().then(() => {
        new PgWorkQueue(
          { dataSource, logger: quiet, table: ${JSON.stringify(TASK_RUNS)}, itemName: 'task run',
            workerId: 'doomed', concurrency: 1, pollIntervalMs: 20, heartbeatIntervalMs: 50,
            staleAfterMs: 60000, maxAttempts: 3 },
          { execute: (item) => new Promise(() => process.stdout.write('claimed ' + item.id + '\\n')) },
        ).start();
      });`;
    const child = spawn(process.execPath, ['-e', source], {
      cwd: path.join(__dirname, '../..'),
      env: { ...process.env, DATABASE_URL: db.url },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    await waitUntil('the child to claim', async () => out.includes(`claimed ${id}`));
    expect(await row(id ?? '')).toMatchObject({ status: 'running', worker_id: 'doomed', attempts: 1 });

    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    // Nothing heartbeats the item any more; a surviving worker with a short lease takes it back.
    const survivor = queue(
      {
        execute: async (_item, execution) => {
          await execution.settle({ status: 'succeeded', finished_at: NOW });
        },
      },
      { workerId: 'survivor', staleAfterMs: 300, heartbeatIntervalMs: 50 },
    );
    survivor.start();
    const done = await waitUntil('the item to be taken back and finished', async () => {
      const current = await row(id ?? '');
      return current.status === 'succeeded' && current;
    });
    expect(done).toMatchObject({ status: 'succeeded', worker_id: null, attempts: 2 });
  });
});
