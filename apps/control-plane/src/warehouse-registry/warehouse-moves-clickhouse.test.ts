import { PassThrough } from 'node:stream';
import request from 'supertest';
import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import {
  defaultWarehouseTimeouts,
  WarehouseEngines,
  type AccountLocation,
  type WarehouseEngine,
} from '@pipeline/destinations';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { JobRunner } from '../jobs/job-runner';
import { startHarness, type Harness } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import type { WarehouseMoveView } from './warehouse.dto';
import { WarehouseMoveExecutor } from './warehouse-move-executor';

// A whole move through the control plane's job runner between engines: an account on a
// PostgreSQL cluster moves to a (chdb-backed) ClickHouse server and then on to a second
// PostgreSQL cluster, every stage run (copy, verify, cut-over, drain, retire).

const OPERATOR_TOKEN = 'operator-token-for-engine-moves-0123456789';
const quiet = createLogger({ service: 'warehouse-moves-clickhouse-test', stream: new PassThrough() });
const clusters = useTestClusters();

function row(event: object, receivedAt: Date): WarehouseRow {
  const result = validateEvent({ anonymousId: 'anon-1', timestamp: receivedAt.toISOString(), ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { receivedAt, ip: '198.51.100.7', userAgent: 'UA' });
}

const keys: Record<string, string> = {
  events: 'message_id',
  users: 'user_id',
  groups: 'group_id',
  aliases: 'message_id',
  crm_deals: 'id',
};

describe('moving an account between PostgreSQL and ClickHouse through the control plane (real servers)', () => {
  let h: Harness;
  let source: TestCluster;
  let last: TestCluster;
  let clickhouse: ClickHouseTestServer;
  let engines: WarehouseEngines;
  let runner: JobRunner;

  const operator = {
    get: (path: string) => request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
    post: (path: string) =>
      request(h.operatorApp).post(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  };
  const placed = async (accountId: string): Promise<{ engine: WarehouseEngine; at: AccountLocation }> => {
    const resolved = await h.services.placements.resolve(accountId);
    return {
      engine: engines.for(resolved.connection),
      at: { accountId, schema: resolved.placement.schema },
    };
  };
  const moved = async (accountId: string, toWarehouse: string): Promise<WarehouseMoveView> => {
    const started = await operator.post('/api/v1/operator/warehouse-moves').send({ accountId, toWarehouse });
    expect(started.status).toBe(202);
    return waitUntil(
      `move of ${accountId} to ${toWarehouse} finished`,
      async () => {
        const move = (await operator.get(`/api/v1/operator/warehouse-moves/${started.body.data.id}`)).body
          .data as WarehouseMoveView;
        return move.stage === 'done' || move.stage === 'failed' ? move : undefined;
      },
      90_000,
    );
  };
  const rowsOn = (cluster: TestCluster, schema: string, table: string) =>
    cluster.query(
      `SELECT to_jsonb(t) AS r FROM ${schema}."${table}" t ORDER BY "${keys[table]}" COLLATE "C"`,
      [],
      'warehouse',
    );

  beforeAll(async () => {
    [source, last, clickhouse] = await Promise.all([
      clusters.start('engine move source'),
      clusters.start('engine move last'),
      startClickHouseTestServer(),
    ]);
    await Promise.all([source, last].map((c) => c.createDatabase('warehouse')));
    engines = WarehouseEngines.open(
      { processMaxConnections: 20, idleMs: 10_000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    h = await startHarness('warehouse moves between engines', {
      warehouseUrl: `${source.urlFor('warehouse')}?sslmode=disable`,
      operatorToken: OPERATOR_TOKEN,
      engineFor: (connection) => engines.for(connection),
    });
    await h.services.warehouses.add({
      name: 'ch',
      engine: 'clickhouse',
      host: '127.0.0.1',
      port: clickhouse.port,
      database: 'default',
      user: clickhouse.user,
      password: clickhouse.password,
      tlsMode: 'disable',
    });
    await h.services.warehouses.add({
      name: 'pg-last',
      host: '127.0.0.1',
      port: last.port,
      database: 'warehouse',
      user: 'postgres',
      password: '',
      tlsMode: 'disable',
    });
    runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: quiet,
      concurrency: 2,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 100,
      staleAfterMs: 10_000,
      maxAttempts: 3,
      retryBaseMs: 50,
      retryMaxMs: 200,
    }).register(
      new WarehouseMoveExecutor({
        dataSource: h.db.dataSource,
        registry: h.services.warehouses,
        engineFor: (connection) => engines.for(connection),
        logger: quiet,
        timings: { consumerWaitMs: 100, drainMs: 200, batchRows: 3, verifyRetryMs: 100 },
      }),
    );
    runner.start();
  }, 120_000);
  afterAll(async () => {
    await runner?.stop();
    await h?.close();
    await engines?.close();
    await clickhouse?.destroy();
  });

  it('moves PostgreSQL -> ClickHouse -> PostgreSQL: every stage passes and every row comes back equal', async () => {
    const t = await h.tenant();
    const first = await placed(t.accountId);
    const day1 = new Date('2026-05-01T09:00:00Z');
    const day2 = new Date('2026-05-02T18:30:00Z');
    await first.engine.ensureAccount(first.at);
    await first.engine.writeRows(first.at, [
      ...Array.from({ length: 7 }, (_, i) =>
        row(
          { type: 'track', messageId: `ev-${i}`, event: 'Order', properties: { i, 'ключ\t€': 'a\nb' } },
          i < 3 ? day1 : day2,
        ),
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
      row(
        {
          type: 'identify',
          messageId: 'id-1',
          userId: 'user-1',
          traits: { plan: 'free', email: 'u1@example.com' },
          timestamp: '2026-05-01T08:00:00Z',
        },
        day2,
      ),
      row({ type: 'group', messageId: 'gr-1', groupId: 'acme', traits: { seats: 12 } }, day1),
      row({ type: 'alias', messageId: 'al-1', userId: 'user-1', previousId: 'anon-1' }, day1),
    ]);
    await first.engine.writeStream(first.at, 'crm_deals', 'id', [
      { id: 'd1', amount: 1200.5, stage: 'won', owner: { name: 'Ann' } },
      { id: 'd2', amount: 80, stage: 'open', owner: null },
    ]);
    const before: Record<string, unknown[]> = {};
    for (const table of Object.keys(keys)) before[table] = await rowsOn(source, first.at.schema, table);
    expect(before.users).toHaveLength(1);

    const toClickHouse = await moved(t.accountId, 'ch');
    expect(toClickHouse).toMatchObject({ stage: 'done', error: null, copyAttempts: 1 });
    expect(toClickHouse.progress.copy).toEqual({ events: 7, users: 1, groups: 1, aliases: 1, crm_deals: 2 });
    expect(toClickHouse.verification).toMatchObject({
      stage: 'drain',
      ok: true,
      tables: {
        events: { sourceRows: 7, targetRows: 7, missingDays: [] },
        users: { sourceRows: 1, targetRows: 1, missingDays: [] },
        crm_deals: { sourceRows: 2, targetRows: 2, missingDays: [] },
      },
    });
    const onClickHouse = await placed(t.accountId);
    expect(onClickHouse.engine.engine).toBe('clickhouse');
    expect(
      (await onClickHouse.engine.tableDays(onClickHouse.at, 'events')).map((d) => [d.day, d.rows]),
    ).toEqual([
      ['2026-05-01', 3],
      ['2026-05-02', 4],
    ]);
    // Retired: the PostgreSQL schema is gone.
    expect(
      await source.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [first.at.schema], 'warehouse'),
    ).toEqual([]);

    const toPostgres = await moved(t.accountId, 'pg-last');
    expect(toPostgres).toMatchObject({ stage: 'done', error: null, copyAttempts: 1 });
    expect(toPostgres.verification).toMatchObject({ stage: 'drain', ok: true });
    const final = await placed(t.accountId);
    expect(final.engine.engine).toBe('postgres');
    for (const table of Object.keys(keys))
      expect(await rowsOn(last, final.at.schema, table)).toEqual(before[table]);
  }, 180_000);
});
