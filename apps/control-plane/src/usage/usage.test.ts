import Decimal from 'decimal.js';
import { startStripeLookAlike, stripeRecords } from '@pipeline/connectors/testing';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { CredentialCipher } from '../apps/credential-cipher';
import { JobRunner } from '../jobs/job-runner';
import { SourceSyncExecutor } from '../sources/source-sync-executor';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import {
  accountWarehousesAt,
  startScratchWarehouse,
  trackRow,
  type ScratchWarehouse,
} from '../testing/warehouse';
import { priceList } from './price-list';
import { PgQueryMeter } from '../warehouse-access/query-meter';
import type { DailyUsageItem, UsageSummary } from './usage.dto';
import { utcDay } from './usage-metering';

const DAY_MS = 86_400_000;
// Prices chosen so every cost is easy to work out by hand.
const prices = {
  storagePerGbMonth: '30',
  queryPerTb: '5',
  computePerSecond: '0.5',
  syncRowsPerMillion: '2',
};

// Known jobs, task runs and tracking rows in real PostgreSQL, metered through the real
// warehouse reader by the metering job, read back through the API (which only reads what the
// job stored: usage-isolation.test.ts).
describe('usage metering and the usage API (real PostgreSQL)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let a: Tenant;
  let b: Tenant;
  const today = utcDay(new Date());
  const yesterday = utcDay(new Date(Date.now() - DAY_MS));
  const noon = (day: string) => new Date(`${day}T12:00:00Z`);

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('usage warehouse');
    h = await startHarness('usage', { meteredWarehouseUrl: warehouse.url, prices: priceList(prices) });
    a = await h.tenant();
    b = await h.tenant();
    const sourceOf = async (t: Tenant) => {
      const app = await h
        .as(t.key)
        .post('/api/v1/apps')
        .send({ appType: 'stripe', displayName: 'Stripe', credentials: { secretKey: 'sk_test_x' } });
      const source = await h
        .as(t.key)
        .post('/api/v1/sources')
        .send({ appId: app.body.data.id, syncType: 'stripe', importTasks: ['customers'] });
      return source.body.data.id as string;
    };
    const job = (t: Tenant, source: string, finished: Date, seconds: number, rows: number) =>
      h.db.dataSource.query(
        `INSERT INTO jobs (account_id, source_id, kind, trigger, status, rows_read, rows_written,
                           started_at, finished_at, attempts, compute_ms)
         VALUES ($1, $2, 'source_sync', 'manual', 'succeeded', $3, $3, $4, $5, 1, $6)`,
        [t.accountId, source, rows, new Date(finished.getTime() - seconds * 1000), finished, seconds * 1000],
      );
    const sourceA = await sourceOf(a);
    await job(a, sourceA, noon(today), 10, 1500);
    await job(a, sourceA, noon(yesterday), 4, 500);
    await job(b, await sourceOf(b), noon(today), 100, 7);
    // A task run of account A: 2.5 seconds of model compute today.
    const [task] = (await h.db.dataSource.query(
      `INSERT INTO tasks (account_id, template_id, template_version, title)
       VALUES ($1, 'warehouse_freshness_check', 1, 'check') RETURNING id`,
      [a.accountId],
    )) as { id: string }[];
    await h.db.dataSource.query(
      `INSERT INTO task_runs (task_id, account_id, status, attempts, started_at, finished_at)
       VALUES ($1, $2, 'succeeded', 1, $3, $4)`,
      [task!.id, a.accountId, new Date(noon(today).getTime() - 2500), noon(today)],
    );
    await warehouse.seed(a.accountId, [
      trackRow({ name: 'a', at: noon(today) }),
      trackRow({ name: 'b', at: noon(today) }),
      trackRow({ name: 'c', at: noon(today) }),
      trackRow({ name: 'd', at: noon(yesterday) }),
    ]);
  });

  afterAll(async () => {
    await h.close();
    await warehouse.drop();
  });

  const daily = async (t: Tenant, query = '') => {
    const response = await h.as(t.key).get(`/api/v1/usage/daily${query}`);
    expect(response.status).toBe(200);
    return (response.body as { data: DailyUsageItem[] }).data;
  };
  const summary = async (t: Tenant, query = '') => {
    const response = await h.as(t.key).get(`/api/v1/usage/summary${query}`);
    expect(response.status).toBe(200);
    return (response.body as { data: UsageSummary }).data;
  };
  const queryBytes = async (accountId: string, purpose: string): Promise<number> => {
    const [row] = (await h.db.dataSource.query(
      'SELECT bytes FROM usage_query_bytes WHERE account_id = $1 AND day = $2 AND purpose = $3',
      [accountId, today, purpose],
    )) as { bytes: string }[];
    return Number(row?.bytes ?? 0);
  };
  const meteredAtOf = async (accountId: string, day: string): Promise<string> => {
    const [row] = (await h.db.dataSource.query(
      'SELECT metered_at FROM usage_daily WHERE account_id = $1 AND day = $2',
      [accountId, day],
    )) as { metered_at: Date }[];
    return row!.metered_at.toISOString();
  };
  const storageBytes = async (accountId: string): Promise<number> => {
    const { rows } = await warehouse.query<{ bytes: string }>(
      `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [warehouseSchemaFor(accountId)],
    );
    return Number(rows[0]?.bytes);
  };

  it('measures the bytes a metered warehouse query processes, per account and purpose', async () => {
    const metered = accountWarehousesAt(warehouse.url, new PgQueryMeter(h.db.dataSource));
    const { engine, account } = await metered.warehouses.locate(a.accountId);
    // count(*) of the whole events table: a sequential scan.
    const scan = () =>
      engine.query(
        account,
        'table_freshness',
        { table: 'events', now: new Date() },
        { purpose: 'model_query' },
      );
    try {
      const before = await queryBytes(a.accountId, 'model_query');
      await scan();
      const { rows } = await warehouse.query<{ bytes: string }>(
        `SELECT pg_relation_size($1::regclass) AS bytes`,
        [`${warehouseSchemaFor(a.accountId)}.events`],
      );
      // A sequential scan reads at least every block of the table.
      expect((await queryBytes(a.accountId, 'model_query')) - before).toBeGreaterThanOrEqual(
        Number(rows[0]?.bytes),
      );
      expect(await queryBytes(b.accountId, 'model_query')).toBe(0);
      // The same query again processes the same bytes: nothing is carried over from the last
      // one. (The first run on a connection also reads the indexes' metapages, for planning.)
      const repeats: number[] = [];
      for (let i = 0; i < 3; i += 1) {
        const previous = await queryBytes(a.accountId, 'model_query');
        await scan();
        repeats.push((await queryBytes(a.accountId, 'model_query')) - previous);
      }
      expect(new Set(repeats).size).toBe(1);
      expect(repeats[0]).toBeGreaterThanOrEqual(Number(rows[0]?.bytes));
    } finally {
      await metered.close();
    }
  });

  it('reports every figure and cost of today and yesterday exactly, and zero days in between', async () => {
    await h.services.metering.meterDay(a.accountId, yesterday);
    await h.services.metering.meterDay(a.accountId, today);
    const meteredAt = await meteredAtOf(a.accountId, today);
    const items = await daily(a, '?days=7');
    expect(items.map((i) => i.date)).toEqual(
      Array.from({ length: 7 }, (_, i) => utcDay(new Date(Date.now() - (6 - i) * DAY_MS))),
    );
    const [first, ...rest] = items;
    expect(first).toEqual({
      date: items[0]!.date,
      storageGb: 0,
      storageCostUsd: 0,
      queryTbProcessed: 0,
      queryCostUsd: 0,
      syncRowsTotal: 0,
      syncRowsCostUsd: 0,
      computeSeconds: 0,
      computeCostUsd: 0,
      modelComputeSeconds: 0,
      modelComputeCostUsd: 0,
      modelQueryTbProcessed: 0,
      modelQueryCostUsd: 0,
      totalCostUsd: 0,
      meteredAt: null,
    });
    const before = rest[rest.length - 2]!;
    expect(before).toMatchObject({
      date: yesterday,
      computeSeconds: 4,
      computeCostUsd: 2,
      modelComputeSeconds: 0,
      syncRowsTotal: 501,
      syncRowsCostUsd: 0.001002,
      storageGb: 0,
    });
    const now = rest[rest.length - 1]!;
    const stored = await storageBytes(a.accountId);
    const daysInMonth = new Date(
      Date.UTC(Number(today.slice(0, 4)), Number(today.slice(5, 7)), 0),
    ).getUTCDate();
    const storageCost = new Decimal(stored).div(1e9).mul(30).div(daysInMonth).toDecimalPlaces(6);
    const ownQueryBytes = await queryBytes(a.accountId, 'query');
    const modelBytes = await queryBytes(a.accountId, 'model_query');
    expect(stored).toBeGreaterThan(0);
    expect(ownQueryBytes).toBeGreaterThan(0);
    const queryCost = new Decimal(ownQueryBytes).div(1e12).mul(5).toDecimalPlaces(6);
    const modelQueryCost = new Decimal(modelBytes).div(1e12).mul(5).toDecimalPlaces(6);
    expect(now).toEqual({
      date: today,
      storageGb: new Decimal(stored).div(1e9).toDecimalPlaces(6).toNumber(),
      storageCostUsd: storageCost.toNumber(),
      queryTbProcessed: new Decimal(ownQueryBytes).div(1e12).toDecimalPlaces(9).toNumber(),
      queryCostUsd: queryCost.toNumber(),
      syncRowsTotal: 1503,
      syncRowsCostUsd: 0.003006,
      computeSeconds: 12.5,
      computeCostUsd: 5,
      modelComputeSeconds: 2.5,
      modelComputeCostUsd: 1.25,
      modelQueryTbProcessed: new Decimal(modelBytes).div(1e12).toDecimalPlaces(9).toNumber(),
      modelQueryCostUsd: modelQueryCost.toNumber(),
      totalCostUsd: storageCost
        .plus(queryCost)
        .plus(modelQueryCost)
        .plus('5')
        .plus('1.25')
        .plus('0.003006')
        .toNumber(),
      meteredAt,
    });
  });

  it('sums the period exactly in the summary, with the legacy fields', async () => {
    const data = await summary(a, '?days=2');
    // What the metering job stored; the request itself read no warehouse and added nothing.
    const stored = (await h.db.dataSource.query(
      `SELECT query_bytes, model_query_bytes, storage_bytes, storage_cost_usd, query_cost_usd,
              model_query_cost_usd FROM usage_daily WHERE account_id = $1 AND day IN ($2, $3)`,
      [a.accountId, yesterday, today],
    )) as Record<string, string>[];
    expect(stored).toHaveLength(2);
    const total = (column: string) => stored.reduce((t, row) => t.plus(row[column]!), new Decimal(0));
    const plus = (...values: Decimal.Value[]) => values.reduce<Decimal>((t, v) => t.plus(v), new Decimal(0));
    expect(data).toMatchObject({
      periodDays: 2,
      periodStart: yesterday,
      periodEnd: today,
      meteredAt: await meteredAtOf(a.accountId, today),
    });
    expect(data.syncRows).toEqual({ total: 2004, costUsd: 0.004008 });
    expect(data.computeSeconds).toBe(16.5);
    expect(data.storage).toEqual({
      gb: new Decimal(await storageBytes(a.accountId)).div(1e9).toDecimalPlaces(6).toNumber(),
      costUsd: total('storage_cost_usd').toNumber(),
    });
    const bytes = total('query_bytes').plus(total('model_query_bytes'));
    const queries = total('query_cost_usd').plus(total('model_query_cost_usd'));
    expect(data.queries).toEqual({
      tbProcessed: bytes.div(1e12).toDecimalPlaces(9).toNumber(),
      costUsd: queries.toNumber(),
    });
    expect(data.compute).toEqual({
      gb: bytes.div(1e9).toDecimalPlaces(6).toNumber(),
      costUsd: plus(queries, 5, 1.25, 2).toNumber(),
    });
    expect(data.totalCostUsd).toBe(
      plus(total('storage_cost_usd'), queries, 5, 1.25, 2, '0.004008').toNumber(),
    );
  });

  it('clamps days to 1-365, defaults to 30, and answers 400 to a non-integer', async () => {
    expect(await daily(a, '?days=0')).toHaveLength(1);
    expect(await daily(a, '?days=-4')).toHaveLength(1);
    expect(await daily(a, '?days=1000')).toHaveLength(365);
    expect(await daily(a)).toHaveLength(30);
    expect(await summary(a, '?days=365')).toMatchObject({ periodDays: 365 });
    expect(await summary(a, '?days=400')).toMatchObject({ periodDays: 365 });
    expect(await summary(a, '?days=0')).toMatchObject({
      periodDays: 1,
      periodStart: today,
      periodEnd: today,
    });
    for (const bad of ['abc', '2.5', '1e3']) {
      const response = await h.as(a.key).get(`/api/v1/usage/summary?days=${bad}`);
      expect(response.status).toBe(400);
      expect(response.body).toMatchObject({ code: 'validation_failed' });
      expect((await h.as(a.key).get(`/api/v1/usage/daily?days=${bad}`)).status).toBe(400);
    }
  });

  it('never shows one account another account’s usage', async () => {
    await h.services.metering.meterDay(b.accountId, today);
    const [now] = (await daily(b, '?days=1')) as [DailyUsageItem];
    expect(now).toMatchObject({
      syncRowsTotal: 7,
      computeSeconds: 100,
      modelComputeSeconds: 0,
      storageGb: 0,
    });
    expect(await summary(b, '?days=2')).toMatchObject({ syncRows: { total: 7 }, computeSeconds: 100 });
  });

  it('meters a real sync job: its rows, its seconds and the table it filled', async () => {
    const c = await h.tenant();
    const stripe = await startStripeLookAlike();
    const runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: createLogger({ service: 'usage-test', level: 'error' }),
      concurrency: 1,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 1000,
      staleAfterMs: 10_000,
      maxAttempts: 1,
      retryBaseMs: 100,
      retryMaxMs: 100,
    }).register(
      new SourceSyncExecutor({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
        logger: createLogger({ service: 'usage-test', level: 'error' }),
        baseUrls: { stripe: stripe.url },
      }),
    );
    try {
      stripe.data.set('customers', stripeRecords('customers', 240, Math.floor(Date.now() / 1000)));
      const app = await h
        .as(c.key)
        .post('/api/v1/apps')
        .send({ appType: 'stripe', displayName: 'Stripe', credentials: { secretKey: stripe.secret } });
      const source = await h
        .as(c.key)
        .post('/api/v1/sources')
        .send({ appId: app.body.data.id, syncType: 'stripe', importTasks: ['customers'], runNow: true });
      const jobId = source.body.data.dispatchedJob.id as string;
      runner.start();
      let status = 'queued';
      for (let i = 0; i < 400 && (status === 'queued' || status === 'running'); i += 1) {
        await new Promise((r) => setTimeout(r, 25));
        status = (await h.as(c.key).get(`/api/v1/jobs/${jobId}`)).body.data.status as string;
      }
      expect(status).toBe('succeeded');
      const [ran] = (await h.db.dataSource.query(
        `SELECT compute_ms AS ms, extract(epoch FROM finished_at - started_at) * 1000 AS wall FROM jobs WHERE id = $1`,
        [jobId],
      )) as { ms: string; wall: string }[];
      // One attempt: its compute is its run time (measured around the executor, so a little shorter).
      expect(Number(ran!.ms)).toBeGreaterThan(0);
      expect(Number(ran!.ms)).toBeLessThanOrEqual(Number(ran!.wall) + 5);
      await h.services.metering.meterDay(c.accountId, today);
      const [now] = (await daily(c, '?days=1')) as [DailyUsageItem];
      const stored = await storageBytes(c.accountId);
      expect(stored).toBeGreaterThan(0);
      expect(now).toMatchObject({
        syncRowsTotal: 240,
        syncRowsCostUsd: 0.00048,
        computeSeconds: new Decimal(Number(ran!.ms)).div(1000).toDecimalPlaces(3).toNumber(),
        storageGb: new Decimal(stored).div(1e9).toDecimalPlaces(6).toNumber(),
        modelComputeSeconds: 0,
      });
    } finally {
      await runner.stop();
      await stripe.close();
    }
  });

  it('requires the usage.read scope', async () => {
    const key = await a.keyWith(['sources.read']);
    expect((await h.as(key).get('/api/v1/usage/summary')).status).toBe(403);
    expect((await h.as(key).get('/api/v1/usage/daily')).status).toBe(403);
    const allowed = await a.keyWith(['usage.read']);
    expect((await h.as(allowed).get('/api/v1/usage/summary')).status).toBe(200);
  });
});
