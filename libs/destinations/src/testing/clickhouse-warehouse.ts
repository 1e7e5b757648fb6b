import { ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client';
import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { warehouseTables, type WarehouseTable } from '@pipeline/events';
import { ClickHouseEngine } from '../warehouse/clickhouse/clickhouse-engine';
import { rowValues } from '../warehouse/clickhouse/clickhouse-rows';
import { jsonColumns } from '../warehouse/warehouse-row-batches';
import { defaultWarehouseTimeouts } from '../warehouse/warehouse-pool';
import { clickhouseConnectionOf, clickhouseTableRows } from './warehouse-table-rows';

// A ClickHouse warehouse for a test of processes (the delivery's warehouse consumer, a
// benchmark): the chdb test server with a login, its WAREHOUSE_URL, an engine for a test's own
// loads, and readers of what the tables hold.

export interface ClickHouseWarehouse {
  readonly server: ClickHouseTestServer;
  /** clickhouse://user:password@127.0.0.1:<port>/default, as WAREHOUSE_URL takes it. */
  readonly url: string;
  /** A client of the server, logged in (closed by destroy). */
  readonly client: ClickHouseClient;
  /** An engine on this server for the test's own writes (closed by destroy). */
  readonly engine: ClickHouseEngine;
  /** Every row of an account's table, by key, as comparable values (clickhouseTableRows). */
  tableRows(database: string, table: WarehouseTable): Promise<Record<string, unknown>[]>;
  /**
   * Rows of an account's stored table (`users_rows` for users): with `final`, one per key;
   * without, every stored copy. 0 when the database or table does not exist yet.
   */
  count(database: string, table: WarehouseTable, final: boolean): Promise<number>;
  destroy(): Promise<void>;
}

export async function startClickHouseWarehouse(): Promise<ClickHouseWarehouse> {
  const server = await startClickHouseTestServer({ user: 'loader', password: 'loader-secret' });
  const client: ClickHouseClient = createClient({
    url: server.url,
    username: server.user,
    password: server.password,
    // A count before the first load meets a missing database: expected, not worth a log line.
    log: { level: ClickHouseLogLevel.OFF },
  });
  const engine = new ClickHouseEngine(clickhouseConnectionOf(server, 'test-clickhouse'), {
    timeouts: defaultWarehouseTimeouts,
    poolMax: 4,
    idleTimeoutMs: 10_000,
  });
  return {
    server,
    url: `clickhouse://${server.user}:${encodeURIComponent(server.password)}@${server.host}:${server.port}/default`,
    client,
    engine,
    tableRows: (database, table) => clickhouseTableRows(client, database, table),
    count: async (database, table, final) => {
      const stored = table === 'users' || table === 'groups' ? `${table}_rows` : table;
      try {
        const result = await client.query({
          query: `SELECT toString(count()) AS n FROM \`${database}\`.\`${stored}\`${final ? ' FINAL' : ''}`,
          format: 'JSONEachRow',
        });
        const [row] = await result.json<{ n: string }>();
        return Number(row?.n ?? 0);
      } catch (error) {
        // UNKNOWN_DATABASE, UNKNOWN_TABLE: nothing loaded yet.
        if (['81', '60'].includes(String((error as { code?: unknown }).code))) return 0;
        throw error;
      }
    },
    destroy: async () => {
      await engine.close();
      await client.close();
      await server.destroy();
    },
  };
}

/** A normalized row as the engine inserts it (a JSONEachRow object of its stored table). */
export const clickhouseRowValues = (
  table: WarehouseTable,
  row: Readonly<Record<string, unknown>>,
): Record<string, unknown> => rowValues(table, row, jsonColumns(warehouseTables[table]));
