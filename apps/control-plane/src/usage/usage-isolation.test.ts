import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, trackRow, type ScratchWarehouse } from '../testing/warehouse';
import type { DailyUsageItem, UsageSummary } from './usage.dto';
import { defaultPrices, priceList } from './price-list';
import { UsageMetering, utcDay } from './usage-metering';

const logged: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk: Buffer) => logged.push(chunk.toString('utf8')));
const logger = createLogger({
  service: 'usage-isolation-test',
  format: 'json',
  level: 'info',
  stream: logStream,
});

const BOUND_MS = 10_000;

/** Settles with `work`, or rejects once `ms` have passed: a bounded wait, not a sleep. */
function within<T>(ms: number, work: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

// The usage endpoints read only what the metering job stored: a request never opens a
// warehouse connection, so one tenant's usage calls cannot hold the warehouse pool every
// tenant shares, nor add scans to its own bill. Proved structurally: with the account's
// warehouse table locked, and with the warehouse gone, usage still answers the stored figures.
describe('usage answers from what the metering job stored (real PostgreSQL)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let dropped = false;
  let a: Tenant;
  let b: Tenant;
  const today = utcDay(new Date());

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('usage isolation warehouse');
    h = await startHarness('usage isolation', { meteredWarehouseUrl: warehouse.url });
    a = await h.tenant();
    b = await h.tenant();
    const now = new Date();
    await warehouse.seed(a.accountId, [trackRow({ name: 'a1', at: now }), trackRow({ name: 'a2', at: now })]);
    await warehouse.seed(b.accountId, [trackRow({ name: 'b1', at: now })]);
    await h.services.metering.meterDay(a.accountId, today);
    await h.services.metering.meterDay(b.accountId, today);
  });
  afterAll(async () => {
    await h.close();
    if (!dropped) await warehouse.drop();
  });

  const stored = async (accountId: string) => {
    const [row] = (await h.db.dataSource.query(
      `SELECT tracking_rows, query_bytes, storage_bytes, metered_at FROM usage_daily
        WHERE account_id = $1 AND day = $2`,
      [accountId, today],
    )) as { tracking_rows: string; query_bytes: string; storage_bytes: string; metered_at: Date }[];
    return row!;
  };
  const queryBytes = async (accountId: string) => {
    const [row] = (await h.db.dataSource.query(
      `SELECT COALESCE(sum(bytes), 0) AS bytes, COALESCE(sum(queries), 0) AS queries
         FROM usage_query_bytes WHERE account_id = $1`,
      [accountId],
    )) as { bytes: string; queries: string }[];
    return { bytes: Number(row!.bytes), queries: Number(row!.queries) };
  };
  const today1 = async (t: Tenant) => {
    const response = await h.as(t.key).get('/api/v1/usage/daily?days=1');
    expect(response.status).toBe(200);
    return (response.body as { data: DailyUsageItem[] }).data[0]!;
  };

  it('gives an account whose warehouse schema does not exist zero usage, as of its metering', async () => {
    const fresh = await h.tenant();
    await h.services.metering.meterDay(fresh.accountId, today);
    const { metered_at } = await stored(fresh.accountId);
    expect(await today1(fresh)).toEqual({
      date: today,
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
      meteredAt: metered_at.toISOString(),
    });
    const summary = await h.as(fresh.key).get('/api/v1/usage/summary?days=1');
    expect(summary.status).toBe(200);
    expect((summary.body as { data: UsageSummary }).data).toEqual({
      periodDays: 1,
      periodStart: today,
      periodEnd: today,
      storage: { gb: 0, costUsd: 0 },
      compute: { gb: 0, costUsd: 0 },
      syncRows: { total: 0, costUsd: 0 },
      totalCostUsd: 0,
      queries: { tbProcessed: 0, costUsd: 0 },
      computeSeconds: 0,
      meteredAt: metered_at.toISOString(),
    });
  });

  it("answers 10 parallel calls of A and one of B while A's warehouse tables are locked", async () => {
    const beforeA = await queryBytes(a.accountId);
    const storedA = await stored(a.accountId);
    const storedB = await stored(b.accountId);
    expect(Number(storedA.tracking_rows)).toBe(2);
    expect(Number(storedB.tracking_rows)).toBe(1);
    // Any read of A's tables (a count, a size) now waits for this transaction: a request that
    // scanned would hang and hold one of the shared pool's connections until it ends.
    const locker = new Client({ connectionString: warehouse.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(
        `LOCK TABLE "${warehouseSchemaFor(a.accountId)}".events, "${warehouseSchemaFor(b.accountId)}".events
           IN ACCESS EXCLUSIVE MODE`,
      );
      const callsOfA = Promise.all(
        Array.from({ length: 10 }, (_, i) =>
          h.as(a.key).get(i % 2 === 0 ? '/api/v1/usage/daily?days=1' : '/api/v1/usage/summary?days=1'),
        ),
      );
      const callOfB = within(BOUND_MS, today1(b), "B's usage call");
      const item = await callOfB;
      expect(item).toMatchObject({
        date: today,
        syncRowsTotal: 1,
        meteredAt: storedB.metered_at.toISOString(),
      });
      const answers = await within(BOUND_MS, callsOfA, "A's 10 usage calls");
      for (const [i, answer] of answers.entries()) {
        expect(answer.status).toBe(200);
        const data = answer.body.data as DailyUsageItem[] | UsageSummary;
        if (i % 2 === 0) expect((data as DailyUsageItem[])[0]).toMatchObject({ syncRowsTotal: 2 });
        else expect((data as UsageSummary).syncRows.total).toBe(2);
      }
      // Nobody waited on the lock, and A was billed for no warehouse query.
      const { rows } = await locker.query<{ waiting: number }>(
        `SELECT count(*)::int AS waiting FROM pg_locks l JOIN pg_database d ON d.oid = l.database
          WHERE d.datname = current_database() AND NOT l.granted`,
      );
      expect(rows).toEqual([{ waiting: 0 }]);
      expect(await queryBytes(a.accountId)).toEqual(beforeA);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });

  it("finishes a metering pass while C's warehouse never answers: B is metered, C times out and says so", async () => {
    const c = await h.tenant();
    await warehouse.seed(c.accountId, [trackRow({ name: 'c1', at: new Date() })]);
    const metering = new UsageMetering(
      h.db.dataSource,
      h.services.accountWarehouses,
      priceList(defaultPrices),
      {
        accountDeadlineMs: 1_000,
      },
    );
    const before = await stored(b.accountId);
    const locker = new Client({ connectionString: warehouse.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      // C's tables only: metering C waits for the lock (lock_timeout: 30 s), B's does not.
      await locker.query(`LOCK TABLE "${warehouseSchemaFor(c.accountId)}".events IN ACCESS EXCLUSIVE MODE`);
      const metered = await within(BOUND_MS, metering.meterAll(today, logger), 'the metering pass');
      expect(metered).toBeGreaterThanOrEqual(1);
      const after = await stored(b.accountId);
      expect(after.metered_at.getTime()).toBeGreaterThan(before.metered_at.getTime());
      expect(Number(after.tracking_rows)).toBe(1);
      const [state] = (await h.db.dataSource.query(
        'SELECT failure_code FROM usage_metering_state WHERE account_id = $1',
        [c.accountId],
      )) as { failure_code: string | null }[];
      expect(state?.failure_code).toBe('metering_timed_out');
      // Never metered before: today's usage is not known, not zero.
      const usageOfC = await h.as(c.key).get('/api/v1/usage/daily?days=1');
      expect(usageOfC.status).toBe(503);
      expect(usageOfC.body).toMatchObject({ code: 'warehouse_unavailable' });
      expect(
        logged.some(
          (line) => line.includes('metering_timed_out') || line.includes('did not end within 1000 ms'),
        ),
      ).toBe(true);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
    // The lock gone, the next pass meters C again.
    await within(BOUND_MS, metering.meterDay(c.accountId, today), "C's metering");
    expect(Number((await stored(c.accountId)).tracking_rows)).toBe(1);
  });

  it('answers the stored figures after the warehouse is gone, and keeps them when metering fails', async () => {
    const before = await today1(a);
    const summaryBefore = (await h.as(a.key).get('/api/v1/usage/summary?days=7')).body;
    await warehouse.drop();
    dropped = true;
    expect(await today1(a)).toEqual(before);
    expect((await h.as(a.key).get('/api/v1/usage/summary?days=7')).body).toEqual(summaryBefore);
    // The next pass cannot read the warehouse: today's stored figures stay, with their time.
    await expect(h.services.metering.meterDay(a.accountId, today)).rejects.toMatchObject({
      code: 'warehouse_unavailable',
    });
    expect(await today1(a)).toEqual(before);
  });
});
