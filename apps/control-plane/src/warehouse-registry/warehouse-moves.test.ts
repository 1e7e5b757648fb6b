import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import request from 'supertest';
import {
  controlPlaneWarehouseCalls,
  defaultWarehouseTimeouts,
  ResolvingWarehouseDirectory,
  WarehouseDestination,
  WarehouseEngines,
  type DeliveryMessage,
  type WarehouseEngine,
} from '@pipeline/destinations';
import { normalizeEvent, validateEvent, type OutboxEnvelope, type WarehouseRow } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { ControlPlaneClient } from '@pipeline/tenancy';
import {
  lookAlikeCredentials,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { CredentialCipher } from '../apps/credential-cipher';
import { IntegrationRunExecutor } from '../integrations/integration-run-executor';
import { JobRunner } from '../jobs/job-runner';
import {
  startHarness,
  TEST_CREDENTIAL_KEYS,
  TEST_WAREHOUSE_TOKEN,
  type Harness,
  type Tenant,
} from '../testing/harness';
import { userRow } from '../testing/warehouse';
import { PlacedWarehouses } from '../warehouse-access/account-warehouses';
import { waitUntil } from '../testing/wait';
import type { WarehouseMoveView } from './warehouse.dto';
import { WarehouseMoveExecutor, type WarehouseMoveTimings } from './warehouse-move-executor';

// Moves between real PostgreSQL servers: two extra clusters are the source and the target
// warehouse, a third one is stopped. The job runner runs each move with short waits (the
// consumers' cache time and the drain are configurable), as the process does with its own.

const OPERATOR_TOKEN = 'operator-token-for-moves-0123456789abcdef';
const quiet = createLogger({ service: 'warehouse-moves-test', stream: new PassThrough() });
const clusters = useTestClusters();
/** The writers' cache of a placement below: the consumers' TENANT_CACHE_TTL_SECONDS, shortened. */
const CACHE_MS = 150;

let offset = 0;
/** An outbox record of `count` events of the account, as ingestion writes it. */
function outboxRecord(accountId: string, ids: string[]): DeliveryMessage {
  const now = new Date().toISOString();
  const envelope: OutboxEnvelope = {
    v: 2,
    accountId,
    writeKeyId: `wk-${accountId}`,
    batchId: randomUUID(),
    receivedAt: now,
    ip: null,
    userAgent: null,
    events: ids.map((messageId) => ({
      type: 'track',
      event: 'Tick',
      messageId,
      anonymousId: 'anon',
      timestamp: now,
    })),
  };
  offset += 1;
  return {
    topic: 'outbox',
    partition: 0,
    offset: String(offset),
    key: accountId,
    value: Buffer.from(JSON.stringify(envelope)),
    headers: {},
    timestamp: String(Date.now()),
  };
}

function row(event: object, receivedAt: Date): WarehouseRow {
  const result = validateEvent({ anonymousId: 'anon-1', timestamp: receivedAt.toISOString(), ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { receivedAt, ip: '198.51.100.7', userAgent: 'UA' });
}

describe('moving an account between warehouses (real PostgreSQL clusters)', () => {
  let h: Harness;
  let source: TestCluster;
  let target: TestCluster;
  let stopped: TestCluster;
  let engines: WarehouseEngines;
  let runner: JobRunner;
  let braze: LookAlikeServer;
  let amplitude: LookAlikeServer;
  let server: Server;
  let controlPlaneUrl: string;
  // Shared with the executor: a test lengthens a wait to stop a move inside it.
  const timings: WarehouseMoveTimings = {
    consumerWaitMs: CACHE_MS * 3,
    drainMs: CACHE_MS * 4,
    batchRows: 3,
    verifyRetryMs: 100,
  };
  const startRunner = () => {
    const started = new JobRunner({
      dataSource: h.db.dataSource,
      logger: quiet,
      concurrency: 2,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 100,
      staleAfterMs: 10_000,
      maxAttempts: 3,
      retryBaseMs: 50,
      retryMaxMs: 200,
    })
      .register(
        new WarehouseMoveExecutor({
          dataSource: h.db.dataSource,
          registry: h.services.warehouses,
          engineFor: (connection) => engines.for(connection),
          logger: quiet,
          timings,
        }),
      )
      .register(
        new IntegrationRunExecutor({
          regulationOf: (accountId) => h.services.regulations.service.regulationOf(accountId),
          dataSource: h.db.dataSource,
          // Each account read where it is placed now, as the process reads it.
          warehouse: new PlacedWarehouses((accountId) => h.services.placements.resolve(accountId), engines),
          cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
          jobs: h.services.jobs,
          logger: quiet,
          baseUrls: { braze: braze.url, amplitude: amplitude.url },
          dependencyRetryMs: 200,
          batchRows: 2,
        }),
      );
    started.start();
    return started;
  };

  const operator = {
    get: (path: string) => request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
    post: (path: string) =>
      request(h.operatorApp).post(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  };
  const engineOf = async (accountId: string): Promise<{ engine: WarehouseEngine; schema: string }> => {
    const resolved = await h.services.placements.resolve(accountId);
    return { engine: engines.for(resolved.connection), schema: resolved.placement.schema };
  };
  const finished = (moveId: string, timeoutMs = 60_000) =>
    waitUntil(
      `move ${moveId} finished`,
      async () => {
        const move = (await operator.get(`/api/v1/operator/warehouse-moves/${moveId}`)).body
          .data as WarehouseMoveView;
        return move.stage === 'done' || move.stage === 'failed' ? move : undefined;
      },
      timeoutMs,
    );
  const placementRow = async (accountId: string) =>
    (
      (await h.db.dataSource.query(
        'SELECT warehouse_id, schema, epoch, move_to_warehouse_id FROM account_warehouses WHERE account_id = $1',
        [accountId],
      )) as Record<string, unknown>[]
    )[0];
  const schemaExists = async (cluster: TestCluster, schema: string) =>
    (await cluster.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema], 'warehouse')).length > 0;
  const tableRows = (cluster: TestCluster, schema: string, table: string, key: string) =>
    cluster.query(`SELECT * FROM ${schema}."${table}" ORDER BY "${key}"`, [], 'warehouse');

  beforeAll(async () => {
    [source, target, stopped] = await Promise.all([
      clusters.start('move source'),
      clusters.start('move target'),
      clusters.start('move stopped'),
    ]);
    await Promise.all([source, target, stopped].map((c) => c.createDatabase('warehouse')));
    engines = WarehouseEngines.open(
      { processMaxConnections: 20, idleMs: 10_000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    h = await startHarness('warehouse moves', {
      warehouseUrl: `${source.urlFor('warehouse')}?sslmode=disable`,
      operatorToken: OPERATOR_TOKEN,
      engineFor: (connection) => engines.for(connection),
    });
    for (const [name, cluster] of [
      ['second', target],
      ['stopped', stopped],
    ] as const)
      await h.services.warehouses.add({
        name,
        host: '127.0.0.1',
        port: cluster.port,
        database: 'warehouse',
        user: 'postgres',
        password: '',
        tlsMode: 'disable',
      });
    await stopped.stop();
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    controlPlaneUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    braze = await startLookAlikeVendor('braze');
    amplitude = await startLookAlikeVendor('amplitude');
    runner = startRunner();
  }, 120_000);
  afterAll(async () => {
    await runner?.stop();
    await braze?.close();
    await amplitude?.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
    await engines?.close();
  });

  it('moves events, users, groups, aliases and a stream table: every row arrives unchanged', async () => {
    const t: Tenant = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const day1 = new Date('2026-05-01T09:00:00Z');
    const day2 = new Date('2026-05-02T18:30:00Z');
    await engine.ensureAccount({ accountId: t.accountId, schema });
    await engine.writeRows({ accountId: t.accountId, schema }, [
      ...Array.from({ length: 7 }, (_, i) =>
        row(
          {
            type: 'track',
            messageId: `ev-${i}`,
            event: 'Order Completed',
            properties: { i, note: 'a\tb\nc' },
          },
          i < 3 ? day1 : day2,
        ),
      ),
      row(
        {
          type: 'identify',
          messageId: 'id-1',
          userId: 'user-1',
          traits: { plan: 'free', email: 'u1@example.com' },
          timestamp: '2026-05-01T08:00:00Z',
        },
        day1,
      ),
      row(
        {
          type: 'identify',
          messageId: 'id-2',
          userId: 'user-1',
          traits: { plan: 'pro' },
          timestamp: '2026-05-02T08:00:00Z',
        },
        day2,
      ),
      row({ type: 'identify', messageId: 'id-3', userId: 'user-2', traits: { plan: 'team' } }, day2),
      row({ type: 'group', messageId: 'gr-1', groupId: 'acme', traits: { seats: 12 } }, day1),
      row({ type: 'alias', messageId: 'al-1', userId: 'user-1', previousId: 'anon-1' }, day1),
    ]);
    await engine.writeStream({ accountId: t.accountId, schema }, 'crm_deals', 'id', [
      { id: 'd1', amount: 1200.5, stage: 'won', owner: { name: 'Ann' } },
      { id: 'd2', amount: 80, stage: 'open', owner: null },
    ]);
    const keys = {
      events: 'message_id',
      users: 'user_id',
      groups: 'group_id',
      aliases: 'message_id',
      crm_deals: 'id',
    };
    const before: Record<string, unknown[]> = {};
    for (const [table, key] of Object.entries(keys))
      before[table] = await tableRows(source, schema, table, key);
    const second = await h.services.warehouses.find('second');

    const started = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'second' });
    expect(started.status).toBe(202);
    expect(started.body.data).toMatchObject({
      accountId: t.accountId,
      toWarehouseId: second.id,
      schema,
      stage: 'queued',
    });
    const move = await finished(started.body.data.id);

    expect(move).toMatchObject({ stage: 'done', error: null, copyAttempts: 1 });
    expect(move.progress.copy).toEqual({ events: 7, users: 2, groups: 1, aliases: 1, crm_deals: 2 });
    expect(move.verification).toMatchObject({
      stage: 'drain',
      ok: true,
      tables: {
        events: { sourceRows: 7, targetRows: 7, missingDays: [] },
        users: { sourceRows: 2, targetRows: 2, missingDays: [] },
        crm_deals: { sourceRows: 2, targetRows: 2, missingDays: [] },
      },
    });
    for (const [table, key] of Object.entries(keys))
      expect(await tableRows(target, schema, table, key)).toEqual(before[table]);
    expect(await schemaExists(source, schema)).toBe(false);
    expect(await placementRow(t.accountId)).toEqual({
      warehouse_id: second.id,
      schema,
      epoch: 2,
      move_to_warehouse_id: null,
    });
    const resolved = await h.services.placements.resolve(t.accountId);
    expect(resolved.connection.port).toBe(target.port);
    expect(resolved.alsoWriteTo).toBeUndefined();
    // The job that ran it succeeded and is not billed as the account's sync rows.
    const [job] = (await h.db.dataSource.query('SELECT kind, status, rows_written FROM jobs WHERE id = $1', [
      move.jobId,
    ])) as Record<string, unknown>[];
    expect(job).toEqual({ kind: 'warehouse_move', status: 'succeeded', rows_written: '0' });
    // The operator's job: the account's API does not show it.
    const asTenant = await h.as(t.key).get(`/api/v1/jobs/${move.jobId}`);
    expect([asTenant.status, asTenant.body.code]).toEqual([404, 'not_found']);

    const listed = await operator.get('/api/v1/operator/warehouse-moves');
    expect(listed.body.data.map((m: WarehouseMoveView) => m.id)).toContain(move.id);
  });

  it('loses and duplicates no row the warehouse consumer writes while the move runs', async () => {
    const t = await h.tenant();
    const { schema } = await engineOf(t.accountId);
    // The warehouse consumer's destination and directory, asking the control plane over HTTP
    // with its own token, its answers cached for CACHE_MS (TENANT_CACHE_TTL_SECONDS, shortened).
    const calls = controlPlaneWarehouseCalls(
      new ControlPlaneClient(controlPlaneUrl, TEST_WAREHOUSE_TOKEN, quiet),
    );
    const directory = new ResolvingWarehouseDirectory(calls.resolve, { ttlMs: CACHE_MS }, quiet);
    const destination = new WarehouseDestination({
      directory,
      engines,
      logger: quiet,
      reportStatus: calls.reportStatus,
      breaker: { baseMs: 50, maxMs: 50, probeWaitMs: 10 },
    });
    let written = 0;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        const ids = Array.from({ length: 5 }, (_, i) => `load-${written + i}`);
        let pending: DeliveryMessage[] = [outboxRecord(t.accountId, ids)];
        // As the consumer runner does: what is held comes back until it is delivered.
        for (let attempt = 0; pending.length > 0; attempt += 1) {
          if (attempt > 100) throw new Error(`records held too long: ${ids.join(', ')}`);
          const report = await destination.deliver(pending);
          pending = report.failed.map((f) => ({ ...f.message, value: f.value }));
          if (pending.length > 0) await new Promise((r) => setTimeout(r, 20));
        }
        written += ids.length;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await waitUntil('rows before the move', async () => written >= 50);
    const started = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'second' });
    expect(started.status).toBe(202);
    const duringCopy = await waitUntil('rows written during the copy stage', async () => {
      const [move] = (await h.db.dataSource.query('SELECT stage FROM warehouse_moves WHERE id = $1', [
        started.body.data.id,
      ])) as { stage: string }[];
      return move?.stage === 'copy' ? written : undefined;
    });
    const move = await finished(started.body.data.id);
    const writtenAtEnd = written;
    await waitUntil('rows after the move', async () => written >= writtenAtEnd + 50);
    stop = true;
    await writer;

    expect(move).toMatchObject({ stage: 'done', error: null });
    expect(duringCopy).toBeGreaterThan(0);
    const ids = (await tableRows(target, schema, 'events', 'message_id')).map((r) => r.message_id as string);
    expect(ids.length).toBe(written);
    expect([...ids].sort()).toEqual(Array.from({ length: written }, (_, i) => `load-${i}`).sort());
    expect(await schemaExists(source, schema)).toBe(false);
    expect(directory.currentEpoch(t.accountId)).toBe(2);
  });

  it('refuses a second move of the account, unknown accounts and warehouses, and bad bodies', async () => {
    const t = await h.tenant();
    const post = (body: object) => operator.post('/api/v1/operator/warehouse-moves').send(body);
    expect((await post({ accountId: t.accountId, toWarehouse: 'default' })).body).toMatchObject({
      status: 409,
      code: 'already_on_warehouse',
    });
    expect((await post({ accountId: 'not-a-uuid', toWarehouse: 'second' })).body).toMatchObject({
      status: 400,
      code: 'validation_failed',
    });
    expect(
      (await post({ accountId: '00000000-0000-4000-8000-000000000000', toWarehouse: 'second' })).body,
    ).toMatchObject({
      status: 404,
      code: 'account_not_found',
    });
    expect((await post({ accountId: t.accountId, toWarehouse: 'nowhere' })).body).toMatchObject({
      status: 404,
      code: 'warehouse_not_found',
    });
    expect(
      (await operator.get('/api/v1/operator/warehouse-moves/0f9e3a52-0000-4000-8000-000000000000')).body,
    ).toMatchObject({
      status: 404,
      code: 'warehouse_move_not_found',
    });
    expect((await request(h.operatorApp).get('/api/v1/operator/warehouse-moves')).status).toBe(401);
    // While one move is active (it waits for the consumers first), another one is refused.
    const first = await post({ accountId: t.accountId, toWarehouse: 'second' });
    expect(first.status).toBe(202);
    expect((await post({ accountId: t.accountId, toWarehouse: 'second' })).body).toMatchObject({
      status: 409,
      code: 'warehouse_move_in_progress',
    });
    expect((await finished(first.body.data.id)).stage).toBe('done');
  });

  it('fails a move to a stopped warehouse cleanly: the account stays readable and writable on its source', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const account = { accountId: t.accountId, schema };
    await engine.writeRows(account, [row({ type: 'track', messageId: 'kept-1', event: 'E' }, new Date())]);
    const before = await placementRow(t.accountId);

    const started = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'stopped' });
    expect(started.status).toBe(202);
    const move = await finished(started.body.data.id);

    expect(move).toMatchObject({ stage: 'failed', error: { code: 'target_unavailable' } });
    expect(move.error?.message).toContain('the account stays on its source');
    expect(await placementRow(t.accountId)).toEqual(before);
    expect((await h.services.placements.resolve(t.accountId)).alsoWriteTo).toBeUndefined();
    const after = await engineOf(t.accountId);
    await after.engine.writeRows(account, [
      row({ type: 'track', messageId: 'kept-2', event: 'E' }, new Date()),
    ]);
    expect((await tableRows(source, schema, 'events', 'message_id')).map((r) => r.message_id)).toEqual([
      'kept-1',
      'kept-2',
    ]);
    // A later move of the same account is accepted: the failed one is not active.
    const again = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'second' });
    expect(again.status).toBe(202);
    expect((await finished(again.body.data.id)).stage).toBe('done');
  });

  it('cancels a move at any stage before it finishes: the job ends, the account stays on its source', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const account = { accountId: t.accountId, schema };
    await engine.writeRows(account, [row({ type: 'track', messageId: 'c-1', event: 'E' }, new Date())]);
    timings.consumerWaitMs = 600_000;
    try {
      const started = await operator
        .post('/api/v1/operator/warehouse-moves')
        .send({ accountId: t.accountId, toWarehouse: 'second' });
      expect(started.status).toBe(202);
      const moveId = started.body.data.id as string;
      await waitUntil('the move in its copy stage, writing to both', async () => {
        const placed = await placementRow(t.accountId);
        return placed?.move_to_warehouse_id !== null;
      });
      const cancelled = await operator.post(`/api/v1/operator/warehouse-moves/${moveId}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.body.data).toMatchObject({
        id: moveId,
        stage: 'failed',
        error: { code: 'warehouse_move_cancelled' },
      });
      expect(cancelled.body.data.finishedAt).not.toBeNull();
      const [job] = (await h.db.dataSource.query('SELECT status, error FROM jobs WHERE id = $1', [
        started.body.data.jobId,
      ])) as { status: string; error: { code: string } }[];
      expect(job).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
      // Writers go back to the source alone, where the account stays.
      expect(await placementRow(t.accountId)).toMatchObject({ move_to_warehouse_id: null, epoch: 1 });
      expect((await h.services.placements.resolve(t.accountId)).alsoWriteTo).toBeUndefined();
      // Its worker let go of it: no job of the runner is running any more.
      await waitUntil('the worker to let the cancelled job go', async () => {
        const [running] = (await h.db.dataSource.query(
          'SELECT count(*)::int AS n FROM jobs WHERE id = $1 AND worker_id IS NOT NULL',
          [started.body.data.jobId],
        )) as { n: number }[];
        return running?.n === 0;
      });
      const again = await operator.post(`/api/v1/operator/warehouse-moves/${moveId}/cancel`);
      expect(again.status).toBe(409);
      expect(again.body).toMatchObject({ code: 'warehouse_move_finished' });
      const unknown = await operator.post(`/api/v1/operator/warehouse-moves/${randomUUID()}/cancel`);
      expect(unknown.status).toBe(404);
      expect(unknown.body).toMatchObject({ code: 'warehouse_move_not_found' });
    } finally {
      timings.consumerWaitMs = CACHE_MS * 3;
    }
    // Another move of the account is accepted: the cancelled one is not active.
    const next = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'second' });
    expect(next.status).toBe(202);
    expect((await finished(next.body.data.id)).stage).toBe('done');
  });

  it('ends a move past its deadline even while a call to the target never returns', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const account = { accountId: t.accountId, schema };
    await engine.writeRows(account, [row({ type: 'track', messageId: 'd-1', event: 'E' }, new Date())]);
    // The account's tables on the target exist and are locked: the copy's import waits for
    // the lock (lock_timeout: 30 s), far past the move's 2 s deadline.
    const second = h.services.warehouses.connectionOf(await h.services.warehouses.find('second'));
    await engines.for(second).ensureAccount(account);
    const locker = new Client({ connectionString: target.urlFor('warehouse') });
    await locker.connect();
    await locker.query('BEGIN');
    await locker.query(`LOCK TABLE ${schema}.events IN ACCESS EXCLUSIVE MODE`);
    timings.deadlineMs = 2_000;
    try {
      const started = await operator
        .post('/api/v1/operator/warehouse-moves')
        .send({ accountId: t.accountId, toWarehouse: 'second' });
      const move = await finished(started.body.data.id, 15_000);
      expect(move).toMatchObject({ stage: 'failed', error: { code: 'warehouse_move_timed_out' } });
      expect(move.error?.message).toContain('the account stays on its source');
      const [job] = (await h.db.dataSource.query('SELECT status FROM jobs WHERE id = $1', [
        started.body.data.jobId,
      ])) as { status: string }[];
      expect(job).toEqual({ status: 'failed' });
      expect(await placementRow(t.accountId)).toMatchObject({ move_to_warehouse_id: null, epoch: 1 });
    } finally {
      delete timings.deadlineMs;
      await locker.query('ROLLBACK');
      await locker.end();
    }
  });

  it('resumes a move at its stage after the control plane stops mid-drain', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    await engine.writeRows({ accountId: t.accountId, schema }, [
      row({ type: 'track', messageId: 'r-1', event: 'E' }, new Date()),
      row({ type: 'track', messageId: 'r-2', event: 'E' }, new Date()),
    ]);
    timings.drainMs = 60_000;
    const started = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'second' });
    await waitUntil('the move in its drain', async () => {
      const [move] = (await h.db.dataSource.query('SELECT stage FROM warehouse_moves WHERE id = $1', [
        started.body.data.id,
      ])) as { stage: string }[];
      return move?.stage === 'drain';
    });
    // A shutdown puts the job back in the queue; the next process picks it up at the drain.
    await runner.stop();
    const [job] = (await h.db.dataSource.query('SELECT status FROM jobs WHERE id = $1', [
      started.body.data.jobId,
    ])) as { status: string }[];
    expect(job).toEqual({ status: 'queued' });
    timings.drainMs = CACHE_MS * 4;
    runner = startRunner();
    const move = await finished(started.body.data.id);

    expect(move).toMatchObject({
      stage: 'done',
      copyAttempts: 1,
      progress: { copy: { events: 2 }, drain: { events: 2 } },
    });
    // The cut-over ran once: one epoch more, not two.
    expect(await placementRow(t.accountId)).toMatchObject({ epoch: 2, move_to_warehouse_id: null });
    expect((await tableRows(target, schema, 'events', 'message_id')).map((r) => r.message_id)).toEqual([
      'r-1',
      'r-2',
    ]);
  });

  it('sends nothing again at the next integration run after a move: the watermarks carry over', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const account = { accountId: t.accountId, schema };
    const at = new Date(Date.now() - 60_000);
    await engine.writeRows(account, [
      userRow('u1', at),
      userRow('u2', at),
      userRow('u3', at),
      row({ type: 'track', messageId: 'ev-a', event: 'signed_up' }, at),
      row({ type: 'track', messageId: 'ev-b', event: 'checkout' }, at),
    ]);
    const appOf = async (appType: string, credentials: object, config: object = {}) =>
      (
        await h
          .as(t.key)
          .post('/api/v1/apps')
          .send({ appType, displayName: `${appType} ${t.accountId}`, credentials, config })
      ).body.data.id as string;
    const integrationOf = async (body: object) =>
      (
        await h
          .as(t.key)
          .post('/api/v1/integrations')
          .send({ schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 }, ...body })
      ).body.data.id as string;
    const users = await integrationOf({
      dataType: 'users',
      destinationAppId: await appOf('braze', lookAlikeCredentials.braze, {
        restEndpoint: 'https://rest.iad-01.braze.com',
      }),
      config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
    });
    const events = await integrationOf({
      dataType: 'events',
      destinationAppId: await appOf('amplitude', lookAlikeCredentials.amplitude),
      config: { global: {}, tasks: [{ task_type: 'recent_events' }] },
    });
    const run = async (id: string) => {
      const response = await h.as(t.key).post(`/api/v1/integrations/${id}/run`);
      expect(response.status).toBe(202);
      const jobId = response.body.data.id as string;
      return waitUntil(`run ${jobId} finished`, async () => {
        const job = (await h.as(t.key).get(`/api/v1/jobs/${jobId}`)).body.data as {
          status: string;
          rowsRead: number;
          rowsWritten: number;
        };
        return ['succeeded', 'failed'].includes(job.status) ? job : undefined;
      });
    };
    expect(await run(users)).toMatchObject({ status: 'succeeded', rowsWritten: 3 });
    expect(await run(events)).toMatchObject({ status: 'succeeded', rowsWritten: 2 });
    braze.accepted.length = 0;
    amplitude.accepted.length = 0;

    const started = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'second' });
    expect((await finished(started.body.data.id)).stage).toBe('done');

    expect(await run(users)).toMatchObject({ status: 'succeeded', rowsRead: 0, rowsWritten: 0 });
    expect(await run(events)).toMatchObject({ status: 'succeeded', rowsRead: 0, rowsWritten: 0 });
    expect(braze.accepted).toEqual([]);
    expect(amplitude.accepted).toEqual([]);
    // What lands on the target after the move is sent, and only that.
    const moved = await engineOf(t.accountId);
    await moved.engine.writeRows(account, [userRow('u4', new Date())]);
    expect(await run(users)).toMatchObject({ status: 'succeeded', rowsWritten: 1 });
    expect(braze.accepted.filter((a) => a.endpoint === 'attributes').map((a) => a.item.external_id)).toEqual([
      'u4',
    ]);
  });

  it("writes a source sync's stream rows to both warehouses while the account moves", async () => {
    const t = await h.tenant();
    const second = await h.services.warehouses.find('second');
    await h.db.dataSource.query(
      'UPDATE account_warehouses SET move_to_warehouse_id = $2 WHERE account_id = $1',
      [t.accountId, second.id],
    );
    try {
      const placed = new PlacedWarehouses((accountId) => h.services.placements.resolve(accountId), engines);
      const { engine, account } = await placed.locate(t.accountId);
      await engine.writeStream(account, 'crm_leads', 'id', [{ id: 'l1', score: 7 }]);
      for (const cluster of [source, target])
        expect(
          (await tableRows(cluster, account.schema, 'crm_leads', 'id')).map((r) => [r.id, r.score, r._raw]),
        ).toEqual([['l1', '7', { id: 'l1', score: 7 }]]);
    } finally {
      await h.db.dataSource.query(
        'UPDATE account_warehouses SET move_to_warehouse_id = NULL WHERE account_id = $1',
        [t.accountId],
      );
    }
  });

  it('passes the verify stage while every row reaches the target a moment after the source, all the time', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const account = { accountId: t.accountId, schema };
    const second = engines.for(
      h.services.warehouses.connectionOf(await h.services.warehouses.find('second')),
    );
    // A writer of a busy account that writes each row to the target LAG_MS after the source:
    // at every look of the verify some row is on its way. Each look is RETRY_MS apart, so a
    // row missing at the first look is there by the last one.
    const LAG_MS = 300;
    timings.verifyRetryMs = 400;
    let stop = false;
    let n = 0;
    const toTarget: Promise<unknown>[] = [];
    const writer = (async () => {
      while (!stop) {
        const rows = [row({ type: 'track', messageId: `both-${n}`, event: 'E' }, new Date())];
        n += 1;
        await engine.writeRows(account, rows);
        toTarget.push(
          new Promise((r) => setTimeout(r, LAG_MS)).then(async () => {
            await second.ensureAccount(account);
            await second.writeRows(account, rows);
          }),
        );
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    try {
      await waitUntil('rows before the move', async () => n >= 20);
      const started = await operator
        .post('/api/v1/operator/warehouse-moves')
        .send({ accountId: t.accountId, toWarehouse: 'second' });
      // The writer stops once the verify has passed: it knows only the source, which the move retires.
      await waitUntil('the verify stage passed, or the move ended', async () => {
        const [current] = (await h.db.dataSource.query('SELECT stage FROM warehouse_moves WHERE id = $1', [
          started.body.data.id,
        ])) as { stage: string }[];
        return current && !['queued', 'copy', 'verify'].includes(current.stage);
      });
      stop = true;
      await writer;
      await Promise.all(toTarget);
      const move = await finished(started.body.data.id);
      expect(move).toMatchObject({ stage: 'done', error: null, copyAttempts: 1 });
    } finally {
      stop = true;
      await writer;
      await Promise.all(toTarget);
      timings.verifyRetryMs = 100;
    }
    const ids = (await tableRows(target, schema, 'events', 'message_id')).map((r) => r.message_id as string);
    expect(ids.sort()).toEqual(Array.from({ length: n }, (_, i) => `both-${i}`).sort());
  });

  it('fails the verify stage after a second copy when rows keep landing on the source alone', async () => {
    const t = await h.tenant();
    const { engine, schema } = await engineOf(t.accountId);
    const account = { accountId: t.accountId, schema };
    const before = await placementRow(t.accountId);
    // A writer that never heard of the move: its rows go to the source only, after each copy.
    let stop = false;
    let n = 0;
    const stale = (async () => {
      while (!stop) {
        await engine.writeRows(account, [
          row({ type: 'track', messageId: `stale-${n}`, event: 'E' }, new Date()),
        ]);
        n += 1;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    try {
      const started = await operator
        .post('/api/v1/operator/warehouse-moves')
        .send({ accountId: t.accountId, toWarehouse: 'second' });
      const move = await finished(started.body.data.id);
      const today = new Date().toISOString().slice(0, 10);

      expect(move).toMatchObject({
        stage: 'failed',
        copyAttempts: 2,
        error: { code: 'warehouse_move_verify_failed' },
        verification: { stage: 'verify', ok: false, tables: { events: { missingDays: [today] } } },
      });
      expect(move.error?.message).toContain(`events: ${today}`);
      expect(await placementRow(t.accountId)).toEqual(before);
      expect((await h.services.placements.resolve(t.accountId)).alsoWriteTo).toBeUndefined();
    } finally {
      stop = true;
      await stale;
    }
    expect(await schemaExists(source, schema)).toBe(true);
    expect((await tableRows(source, schema, 'events', 'message_id')).length).toBe(n);
  });
});
