import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import {
  controlPlaneWarehouseCalls,
  defaultWarehouseTimeouts,
  ResolvingWarehouseDirectory,
  WarehouseDestination,
  WarehouseEngines,
  type DeliveryMessage,
} from '@pipeline/destinations';
import type { OutboxEnvelope } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import { ControlPlaneClient, TenantChangePublisher, TenantChangeSubscriber } from '@pipeline/tenancy';
import { runOperatorCli } from '../cli/operator-cli';
import { startHarness, TEST_CREDENTIAL_KEYS, TEST_WAREHOUSE_TOKEN, type Harness } from '../testing/harness';
import { defaultPrices, priceList } from '../usage/price-list';
import { utcDay, UsageMetering } from '../usage/usage-metering';
import { waitUntil } from '../testing/wait';
import { PlacedWarehouses } from '../warehouse-access/account-warehouses';
import type { WarehouseMoveView } from './warehouse.dto';

// A warehouse that is gone for good: an account on it is re-placed on another one without
// copying, through the operator API (and its CLI), and the lost warehouse's entry is deleted.
// Real PostgreSQL clusters: A is the default, B is killed. The account's events travel the
// warehouse consumer's own path (its destination, and its directory asking the control plane
// over HTTP), and the consumer hears the placement change through the tenant-change broadcast.

const OPERATOR_TOKEN = 'operator-token-for-abandon-0123456789abcdef';
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const quiet = createLogger({ service: 'warehouse-abandon-test', stream: new PassThrough() });
const clusters = useTestClusters();
/**
 * The consumer's cache of a placement: far longer than the test, so only the broadcast can make
 * it resolve the new placement "at once".
 */
const CACHE_MS = 10 * 60_000;

let offset = 0;
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

describe('re-placing an account off a lost warehouse, and deleting its entry (real PostgreSQL)', () => {
  let h: Harness;
  let a: TestCluster;
  let b: TestCluster;
  let engines: WarehouseEngines;
  let server: Server;
  let directory: ResolvingWarehouseDirectory | undefined;
  let redis: RedisClient | undefined;
  let subscriber: TenantChangeSubscriber;
  let destination: WarehouseDestination;
  /** What the consumer heard on the tenant-change channel. */
  const heard: string[] = [];

  const operator = {
    get: (path: string) => request(h.operatorApp).get(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
    post: (path: string) =>
      request(h.operatorApp).post(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
    delete: (path: string) =>
      request(h.operatorApp).delete(path).set('Authorization', `Bearer ${OPERATOR_TOKEN}`),
  };
  const eventIds = async (cluster: TestCluster, schema: string) =>
    (
      await cluster.query<{ message_id: string }>(
        `SELECT message_id FROM ${schema}.events ORDER BY message_id`,
        [],
        'warehouse',
      )
    ).map((row) => row.message_id);
  const meteringState = async (accountId: string) =>
    (
      (await h.db.dataSource.query(
        'SELECT failure_code, failed_at, succeeded_at FROM usage_metering_state WHERE account_id = $1',
        [accountId],
      )) as { failure_code: string | null; failed_at: Date | null; succeeded_at: Date | null }[]
    )[0];
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runOperatorCli(
      argv,
      h.db.dataSource,
      { out: (text) => out.push(text), err: (text) => err.push(text) },
      { credentialKeys: TEST_CREDENTIAL_KEYS },
    );
    return { code, out: out.join(''), err: err.join('') };
  };

  beforeAll(async () => {
    [a, b] = await Promise.all([clusters.start('abandon a'), clusters.start('abandon b')]);
    await Promise.all([a, b].map((c) => c.createDatabase('warehouse')));
    engines = WarehouseEngines.open(
      { processMaxConnections: 20, idleMs: 10_000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    // The broadcast on a real Redis, heard as the warehouse consumer hears it.
    redis = createRedis({ REDIS_URL }, { logger: quiet, keyPrefix: 'control-plane:' });
    await redis.connect();
    subscriber = TenantChangeSubscriber.start(
      { REDIS_URL },
      (event) => {
        if (event.kind === 'tenant_changed') heard.push(event.accountId);
        directory?.invalidate(event);
      },
      quiet,
    );
    await waitUntil('subscribed to tenant changes', async () => subscriber.live);
    h = await startHarness('warehouse abandon', {
      warehouseUrl: `${a.urlFor('warehouse')}?sslmode=disable`,
      operatorToken: OPERATOR_TOKEN,
      engineFor: (connection) => engines.for(connection),
      tenantChanges: new TenantChangePublisher(redis, quiet),
    });
    for (const [name, port] of [
      ['b', b.port],
      // Never reached: the target of a move no job runner runs here.
      ['c', 1],
    ] as const)
      await h.services.warehouses.add({
        name,
        host: '127.0.0.1',
        port,
        database: 'warehouse',
        user: 'postgres',
        password: '',
        tlsMode: 'disable',
      });
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const calls = controlPlaneWarehouseCalls(
      new ControlPlaneClient(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        TEST_WAREHOUSE_TOKEN,
        quiet,
      ),
    );
    directory = new ResolvingWarehouseDirectory(
      calls.resolve,
      { ttlMs: CACHE_MS, hearsChanges: () => subscriber.live },
      quiet,
    );
    destination = new WarehouseDestination({
      directory,
      engines,
      logger: quiet,
      reportStatus: calls.reportStatus,
      breaker: { baseMs: 50, maxMs: 50, probeWaitMs: 10 },
    });
  }, 120_000);
  afterAll(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
    await engines?.close();
    await subscriber?.stop();
    if (redis) await closeRedis(redis);
  });

  it("lands the account's next and held events on A once re-placed; metering recovers; B's entry then deletes", async () => {
    const t = await h.tenant();
    const placed = await h.services.placements.place(t.accountId, 'b');
    const bId = placed.warehouseId;
    const aId = (await h.services.warehouses.find('default')).id;
    const metering = new UsageMetering(
      h.db.dataSource,
      new PlacedWarehouses((accountId) => h.services.placements.resolve(accountId), engines),
      priceList(defaultPrices),
    );

    // On B while it answers.
    expect(await destination.deliver([outboxRecord(t.accountId, ['ev-1', 'ev-2'])])).toMatchObject({
      delivered: 2,
      failed: [],
    });
    expect(await eventIds(b, placed.schema)).toEqual(['ev-1', 'ev-2']);

    // B is lost: its events are held for it, metering fails at every pass.
    await b.kill();
    const lost = await destination.deliver([outboxRecord(t.accountId, ['ev-3', 'ev-4'])]);
    expect(lost.delivered).toBe(0);
    expect(lost.failed).toHaveLength(1);
    expect(lost.failed[0]).toMatchObject({ target: `warehouse:${bId}`, holdUntilAvailable: true });
    await expect(metering.meterDay(t.accountId, utcDay(new Date()))).rejects.toMatchObject({
      code: 'warehouse_unavailable',
    });
    expect(await meteringState(t.accountId)).toMatchObject({ failure_code: 'warehouse_unavailable' });

    // B cannot be deleted while the account is on it; the re-placement needs the explicit flag.
    const early = await operator.delete('/api/v1/operator/warehouses/b');
    expect([early.status, early.body.code]).toEqual([409, 'warehouse_in_use']);
    const place = (body: object) => operator.post('/api/v1/operator/warehouses/default/accounts').send(body);
    const unsaid = await place({ accountId: t.accountId });
    expect([unsaid.status, unsaid.body.code]).toEqual([400, 'abandon_data_required']);
    const saidFalse = await place({ accountId: t.accountId, abandonData: false });
    expect([saidFalse.status, saidFalse.body.code]).toEqual([400, 'abandon_data_required']);
    expect((await h.services.placements.placementOf(t.accountId)).warehouseId).toBe(bId);

    heard.length = 0;
    const replaced = await place({ accountId: t.accountId, abandonData: true });
    expect(replaced.status).toBe(200);
    expect(replaced.body.data).toEqual({
      accountId: t.accountId,
      warehouseId: aId,
      engine: 'postgres',
      schema: placed.schema,
      epoch: placed.epoch + 1,
      abandoned: { warehouseId: bId, schema: placed.schema },
    });
    // Told at once, as a move's cut-over tells it: the consumer's cached B is dropped (its
    // cache would keep B for CACHE_MS otherwise).
    await waitUntil('the consumer heard the change', async () => heard.includes(t.accountId), 5000);

    // The held record comes back, as the runner brings it back, and a new one follows: both on A.
    const held = lost.failed[0];
    if (!held) throw new Error('no held record');
    const after = await destination.deliver([
      { ...held.message, value: held.value },
      outboxRecord(t.accountId, ['ev-5']),
    ]);
    expect(after).toMatchObject({ delivered: 3, failed: [] });
    expect(await eventIds(a, placed.schema)).toEqual(['ev-3', 'ev-4', 'ev-5']);
    expect(directory?.currentEpoch(t.accountId)).toBe(placed.epoch + 1);

    await metering.meterDay(t.accountId, utcDay(new Date()));
    const state = await meteringState(t.accountId);
    expect(state?.succeeded_at).not.toBeNull();
    expect(state?.succeeded_at?.getTime()).toBeGreaterThan(state?.failed_at?.getTime() ?? Infinity);
    const [usage] = (await h.db.dataSource.query(
      'SELECT tracking_rows FROM usage_daily WHERE account_id = $1 AND day = $2',
      [t.accountId, utcDay(new Date())],
    )) as { tracking_rows: string }[];
    expect(usage?.tracking_rows).toBe('3');

    // Nothing is on B any more: its entry goes, and is gone.
    const deleted = await operator.delete('/api/v1/operator/warehouses/b');
    expect(deleted.status).toBe(204);
    const gone = await operator.get(`/api/v1/operator/warehouses/${bId}`);
    expect([gone.status, gone.body.code]).toEqual([404, 'warehouse_not_found']);
    const again = await operator.delete('/api/v1/operator/warehouses/b');
    expect([again.status, again.body.code]).toEqual([404, 'warehouse_not_found']);
  });

  it('refuses while a move of the account is active, and keeps a finished move when its side is deleted', async () => {
    const t = await h.tenant();
    const started = await operator
      .post('/api/v1/operator/warehouse-moves')
      .send({ accountId: t.accountId, toWarehouse: 'c' });
    expect(started.status).toBe(202);
    const moveId = (started.body.data as WarehouseMoveView).id;

    const refused = await operator
      .post('/api/v1/operator/warehouses/c/accounts')
      .send({ accountId: t.accountId, abandonData: true });
    expect([refused.status, refused.body.code]).toEqual([409, 'warehouse_move_in_progress']);
    const inMove = await operator.delete('/api/v1/operator/warehouses/c');
    expect([inMove.status, inMove.body.code]).toEqual([409, 'warehouse_in_move']);

    // As the executor records a move that failed before its cut-over.
    await h.db.dataSource.query(
      "UPDATE warehouse_moves SET stage = 'failed', finished_at = now() WHERE id = $1",
      [moveId],
    );
    expect((await operator.delete('/api/v1/operator/warehouses/c')).status).toBe(204);
    const move = await operator.get(`/api/v1/operator/warehouse-moves/${moveId}`);
    expect(move.body.data).toMatchObject({
      id: moveId,
      stage: 'failed',
      fromWarehouseId: (await h.services.warehouses.find('default')).id,
      toWarehouseId: null,
    });
  });

  it('refuses the default, an unknown warehouse or account, a bad body, and the same warehouse', async () => {
    const t = await h.tenant();
    const theDefault = await operator.delete('/api/v1/operator/warehouses/default');
    expect([theDefault.status, theDefault.body.code]).toEqual([409, 'warehouse_is_default']);
    const unknown = await operator.delete('/api/v1/operator/warehouses/nowhere');
    expect([unknown.status, unknown.body.code]).toEqual([404, 'warehouse_not_found']);
    const place = (warehouse: string, body: object) =>
      operator.post(`/api/v1/operator/warehouses/${warehouse}/accounts`).send(body);
    const cases: [string, object, number, string][] = [
      ['default', { accountId: 'not-a-uuid', abandonData: true }, 400, 'validation_failed'],
      ['nowhere', { accountId: t.accountId, abandonData: true }, 404, 'warehouse_not_found'],
      [
        'default',
        { accountId: '00000000-0000-4000-8000-000000000000', abandonData: true },
        404,
        'account_not_found',
      ],
      ['default', { accountId: t.accountId, abandonData: true }, 409, 'already_on_warehouse'],
    ];
    for (const [warehouse, body, status, code] of cases) {
      const answer = await place(warehouse, body);
      expect([warehouse, answer.status, answer.body.code]).toEqual([warehouse, status, code]);
    }
    expect((await request(h.operatorApp).delete('/api/v1/operator/warehouses/default')).status).toBe(401);
  });

  it('does the same from the operator CLI: place needs --abandon-data, delete refuses a used entry', async () => {
    const t = await h.tenant();
    await h.services.warehouses.add({
      name: 'd',
      host: '127.0.0.1',
      port: 1,
      database: 'warehouse',
      user: 'postgres',
      password: '',
      tlsMode: 'disable',
    });
    await h.services.placements.place(t.accountId, 'd');

    const unsaid = await cli('warehouses', 'place', t.accountId, '--to', 'default');
    expect(unsaid.code).toBe(1);
    expect(unsaid.err).toContain('(abandon_data_required)');
    const used = await cli('warehouses', 'delete', 'd');
    expect(used.code).toBe(1);
    expect(used.err).toContain('(warehouse_in_use)');

    const placed = await cli(
      'warehouses',
      'place',
      t.accountId,
      '--to',
      'default',
      '--abandon-data',
      '--json',
    );
    expect(placed.code).toBe(0);
    expect(JSON.parse(placed.out)).toMatchObject({
      accountId: t.accountId,
      warehouseId: (await h.services.warehouses.find('default')).id,
    });
    const deleted = await cli('warehouses', 'delete', 'd');
    expect([deleted.code, deleted.err]).toEqual([0, '']);
    expect(deleted.out).toMatch(/^warehouse [0-9a-f-]{36} "d" deleted$/);
    const gone = await cli('warehouses', 'delete', 'd');
    expect(gone.err).toContain('(warehouse_not_found)');
  });
});
