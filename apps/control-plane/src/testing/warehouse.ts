import { Pool, type QueryResultRow } from 'pg';
import {
  defaultWarehouseTimeouts,
  warehouseConnectionFromUrl,
  WarehouseEngines,
  WarehouseWriter,
} from '@pipeline/destinations';
import { warehouseTables, type RowOf, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, quietOnLostConnections } from '@pipeline/postgres';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import {
  OneWarehouse,
  defaultWarehouseMaxConnections,
  type AccountWarehouses,
} from '../warehouse-access/account-warehouses';
import type { QueryMeter } from '../warehouse-access/query-meter';

/** The control plane's view of the warehouse at `url` (metered into `meter` when given), and how to close it. */
export function accountWarehousesAt(
  url: string,
  meter?: QueryMeter,
): { warehouses: AccountWarehouses; close(): Promise<void> } {
  const metered = meter
    ? {
        meter: (accountId: string, purpose: 'query' | 'model_query', bytes: number) =>
          meter.record(accountId, purpose, bytes),
      }
    : {};
  const engines = WarehouseEngines.open(
    { processMaxConnections: 10, idleMs: 10_000 },
    {
      postgres: { timeouts: defaultWarehouseTimeouts, ...metered },
      clickhouse: { timeouts: defaultWarehouseTimeouts, ...metered },
    },
  );
  return {
    warehouses: new OneWarehouse(
      engines,
      warehouseConnectionFromUrl(url, { maxConnections: defaultWarehouseMaxConnections }),
    ),
    close: () => engines.close(),
  };
}

/** A suite's own warehouse database, written with the production warehouse writer. */
export interface ScratchWarehouse {
  url: string;
  /** The warehouse as the control plane reaches it (unmetered). */
  warehouses: AccountWarehouses;
  /** Runs SQL on the warehouse directly, for a test to check what landed. */
  query<R extends QueryResultRow = QueryResultRow>(sql: string, values?: unknown[]): Promise<{ rows: R[] }>;
  seed(accountId: string, rows: WarehouseRow[]): Promise<void>;
  /** Creates the account's schema and tables without rows. */
  createSchema(accountId: string): Promise<void>;
  drop(): Promise<void>;
}

export async function startScratchWarehouse(label: string): Promise<ScratchWarehouse> {
  const scratch = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, label);
  const writer = new WarehouseWriter(scratch.url);
  const reached = accountWarehousesAt(scratch.url);
  const direct = new Pool({ connectionString: scratch.url, max: 2 });
  // drop() forces the database's backends off: a client that pool.end() has let go but whose
  // backend has not yet exited gets 57P01, which without a listener ends the test process.
  quietOnLostConnections(direct);
  return {
    url: scratch.url,
    warehouses: reached.warehouses,
    query: (sql, values = []) => direct.query(sql, values),
    async seed(accountId, rows) {
      await writer.write(warehouseSchemaFor(accountId), rows);
    },
    createSchema: (accountId) => writer.ensureSchema(warehouseSchemaFor(accountId)),
    async drop() {
      await writer.close();
      await reached.close();
      await direct.end();
      await scratch.drop();
    },
  };
}

let sequence = 0;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

function emptyRow<T extends keyof typeof warehouseTables>(table: T): Mutable<RowOf<T>> {
  return Object.fromEntries(Object.keys(warehouseTables[table]).map((c) => [c, null])) as Mutable<RowOf<T>>;
}

/** A track (or page) row of the events table. */
export function trackRow(event: {
  name: string;
  properties?: Record<string, unknown>;
  at: Date;
  type?: 'track' | 'page';
  receivedAt?: Date;
}): WarehouseRow {
  sequence += 1;
  const row = emptyRow('events');
  row.message_id = `msg-${Date.now()}-${sequence}`;
  row.anonymous_id = `anon-${sequence % 3}`;
  row.type = event.type ?? 'track';
  if (row.type === 'page') row.name = event.name;
  else row.event = event.name;
  row.properties = event.properties ?? {};
  row.timestamp = event.at.toISOString();
  row.received_at = (event.receivedAt ?? event.at).toISOString();
  return { table: 'events', row };
}

/** An identify row of the users table. */
export function userRow(userId: string, receivedAt: Date): WarehouseRow {
  sequence += 1;
  const row = emptyRow('users');
  row.message_id = `msg-${Date.now()}-${sequence}`;
  row.user_id = userId;
  row.traits = { plan: 'pro' };
  row.timestamp = receivedAt.toISOString();
  row.received_at = receivedAt.toISOString();
  return { table: 'users', row };
}
