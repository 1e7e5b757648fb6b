import { randomBytes } from 'node:crypto';
import Decimal from 'decimal.js';
import { Pool } from 'pg';
import { MAX_STORAGE_BYTES } from '@pipeline/destinations';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { startHarness, type Harness } from '../testing/harness';
import {
  accountWarehousesAt,
  startScratchWarehouse,
  trackRow,
  type ScratchWarehouse,
} from '../testing/warehouse';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import { priceList } from './price-list';
import { UsageMetering, utcDay } from './usage-metering';

const prices = priceList({
  storagePerGbMonth: '30',
  queryPerTb: '5',
  computePerSecond: '0.5',
  syncRowsPerMillion: '2',
});
const FORGED = -1_000_000_000_000_000;

// Security review 2026-11-29, finding 5: a customer's own PostgreSQL is the customer's to set up.
// Its superuser puts a schema first on the loader role's search_path with a look-alike
// pg_total_relation_size(oid), and the metered storage came out at -10^15 bytes (about -$766 a
// day at list price), offsetting every other charge.
describe('storage metered on a server whose search_path shadows pg_catalog (real PostgreSQL)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let role: string;
  let loader: ReturnType<typeof accountWarehousesAt>;
  let loaderPool: Pool;
  const today = utcDay(new Date());

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('usage evil search path');
    h = await startHarness('usage customer storage');
    role = `evil_loader_${randomBytes(4).toString('hex')}`;
    await warehouse.query(`CREATE ROLE ${role} LOGIN SUPERUSER`);
    await warehouse.query('CREATE SCHEMA evil');
    await warehouse.query(
      `CREATE FUNCTION evil.pg_total_relation_size(oid) RETURNS bigint LANGUAGE sql AS 'SELECT ${FORGED}::bigint'`,
    );
    await warehouse.query(`ALTER ROLE ${role} SET search_path = evil, pg_catalog`);
    const url = new URL(warehouse.url);
    url.username = role;
    url.password = '';
    loader = accountWarehousesAt(url.toString());
    loaderPool = new Pool({ connectionString: url.toString(), max: 1 });
  });

  afterAll(async () => {
    await loaderPool.end();
    await loader.close();
    await h.close();
    await warehouse.query(`DROP ROLE ${role}`);
    await warehouse.drop();
  });

  const seededAccount = async () => {
    const tenant = await h.tenant();
    await warehouse.seed(tenant.accountId, [trackRow({ name: 'a', at: new Date() })]);
    const { rows } = await warehouse.query<{ bytes: string }>(
      `SELECT pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid)) AS bytes
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'm')`,
      [warehouseSchemaFor(tenant.accountId)],
    );
    return { accountId: tenant.accountId, realBytes: Number(rows[0]?.bytes) };
  };
  const stored = async (accountId: string) => {
    const [row] = (await h.db.dataSource.query(
      'SELECT storage_bytes, storage_cost_usd FROM usage_daily WHERE account_id = $1 AND day = $2',
      [accountId, today],
    )) as { storage_bytes: string; storage_cost_usd: string }[];
    return { bytes: Number(row?.storage_bytes), cost: new Decimal(String(row?.storage_cost_usd)).toFixed() };
  };
  const ownedBy = (owner: 'platform' | 'customer'): AccountWarehouses => ({
    locate: async (accountId) => ({ ...(await loader.warehouses.locate(accountId)), owner }),
  });

  it('is live on that role: an unqualified query there sees the forged size', async () => {
    const { accountId } = await seededAccount();
    const { rows } = await loaderPool.query<{ bytes: string }>(
      `SELECT sum(pg_total_relation_size(c.oid)) AS bytes FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [warehouseSchemaFor(accountId)],
    );
    expect(Number(rows[0]?.bytes)).toBeLessThan(0);
  });

  it('stores the real, non-negative size, billed on the service’s warehouse', async () => {
    const { accountId, realBytes } = await seededAccount();
    expect(realBytes).toBeGreaterThan(0);
    expect(realBytes).toBeLessThan(MAX_STORAGE_BYTES);
    await new UsageMetering(h.db.dataSource, ownedBy('platform'), prices).meterDay(accountId, today);
    const daysInMonth = new Date(
      Date.UTC(Number(today.slice(0, 4)), Number(today.slice(5, 7)), 0),
    ).getUTCDate();
    expect(await stored(accountId)).toEqual({
      bytes: realBytes,
      cost: new Decimal(realBytes)
        .div(1e9)
        .mul(30)
        .div(daysInMonth)
        .toDecimalPlaces(6, Decimal.ROUND_HALF_UP)
        .toFixed(),
    });
  });

  it('shows a customer warehouse’s storage at no cost', async () => {
    const { accountId, realBytes } = await seededAccount();
    await new UsageMetering(h.db.dataSource, ownedBy('customer'), prices).meterDay(accountId, today);
    expect(await stored(accountId)).toEqual({ bytes: realBytes, cost: '0' });
  });
});
