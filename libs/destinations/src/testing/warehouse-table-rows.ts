import type { ClickHouseClient } from '@clickhouse/client';
import type { WarehouseConnection } from '@pipeline/tenancy';
import { Client } from 'pg';
import { warehouseTables, type WarehouseTable } from '@pipeline/events';

// An account's warehouse tables read back the same way from either engine, so that two loads
// compare row by row: PostgreSQL's rows as to_jsonb gives them, ClickHouse's as its tables and
// views store them (times as text, JSON as text). Both become plain values: every time an ISO
// instant with milliseconds (what a JavaScript Date carries), every JSON value parsed, -0 as 0.

const keyColumn: Record<WarehouseTable, string> = {
  events: 'message_id',
  aliases: 'message_id',
  users: 'user_id',
  groups: 'group_id',
};
const folded = (table: WarehouseTable) => table === 'users' || table === 'groups';

/** The columns compared: the table's, and for users and groups the orders they were folded by. */
export function comparedColumns(table: WarehouseTable): string[] {
  return [
    ...Object.keys(warehouseTables[table]),
    ...(folded(table) ? ['_event_order', '_trait_orders'] : []),
  ];
}

/** A JSON value with -0 as 0 (jsonb keeps no sign of zero; JSON text may). */
function plainJson(value: unknown): unknown {
  if (typeof value === 'number') return value === 0 ? 0 : value;
  if (Array.isArray(value)) return value.map(plainJson);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      // defineProperty: a key named __proto__ stays an own key.
      Object.defineProperty(out, k, {
        value: plainJson(v),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** ClickHouse's DateTime64 text (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) or ISO text, as ISO. */
function instant(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const text = String(value);
  const iso = /^\d{4}-\d{2}-\d{2} /.test(text) ? `${text.replace(' ', 'T')}Z` : text;
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) throw new Error(`not a time: ${text}`);
  return new Date(ms).toISOString();
}

/** One stored row as comparable values, by the column types of warehouseTables. */
export function comparableRow(
  table: WarehouseTable,
  row: Record<string, unknown>,
  jsonAsText: boolean,
): Record<string, unknown> {
  const types = warehouseTables[table] as Record<string, string>;
  const out: Record<string, unknown> = {};
  for (const column of comparedColumns(table)) {
    const value = row[column] ?? null;
    const type = column === '_trait_orders' ? 'jsonb' : types[column];
    if (value === null) out[column] = null;
    else if (type === 'timestamptz') out[column] = instant(value);
    else if (type === 'jsonb') out[column] = plainJson(jsonAsText ? JSON.parse(String(value)) : value);
    else out[column] = value;
  }
  return out;
}

/** Keys in code point order (the order of UTF-8 bytes), whatever the server's collation. */
const byKey =
  (table: WarehouseTable) =>
  (a: Record<string, unknown>, b: Record<string, unknown>): number =>
    Buffer.compare(Buffer.from(String(a[keyColumn[table]])), Buffer.from(String(b[keyColumn[table]])));

const isMissing = (error: unknown, codes: string[]) =>
  codes.includes(String((error as { code?: unknown }).code ?? ''));

/** Every row of a PostgreSQL account's table, by key; none when the schema or table is missing. */
export async function postgresTableRows(
  url: string,
  schema: string,
  table: WarehouseTable,
): Promise<Record<string, unknown>[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(t) AS row FROM "${schema}"."${table}" t`,
    );
    return rows.map((r) => comparableRow(table, r.row, false)).sort(byKey(table));
  } catch (error) {
    if (isMissing(error, ['42P01', '3F000'])) return [];
    throw error;
  } finally {
    await client.end();
  }
}

/**
 * Every row of a ClickHouse account's table, by key: events and aliases with FINAL (one copy
 * of a message), users and groups through their folding views. None when the database or
 * table is missing (UNKNOWN_DATABASE 81, UNKNOWN_TABLE 60).
 */
export async function clickhouseTableRows(
  client: ClickHouseClient,
  database: string,
  table: WarehouseTable,
): Promise<Record<string, unknown>[]> {
  const columns = comparedColumns(table)
    .map((c) => `\`${c}\``)
    .join(', ');
  try {
    const result = await client.query({
      query: `SELECT ${columns} FROM \`${database}\`.\`${table}\`${folded(table) ? '' : ' FINAL'}`,
      format: 'JSONEachRow',
    });
    const rows = await result.json<Record<string, unknown>>();
    return rows.map((r) => comparableRow(table, r, true)).sort(byKey(table));
  } catch (error) {
    if (isMissing(error, ['81', '60'])) return [];
    throw error;
  }
}

/** The connection fields of a ClickHouse test server, as a warehouse's registry row gives them. */
export function clickhouseConnectionOf(
  server: { host: string; port: number; user: string; password: string },
  warehouseId: string,
  maxConnections = 5,
): WarehouseConnection {
  return {
    warehouseId,
    engine: 'clickhouse',
    host: server.host,
    port: server.port,
    database: 'default',
    user: server.user,
    password: server.password,
    tlsMode: 'disable',
    owner: 'platform',
    maxConnections,
  };
}
