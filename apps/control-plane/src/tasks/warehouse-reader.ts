import { Pool, type QueryResultRow } from 'pg';
import { warehouseSchemaFor } from '@pipeline/tenancy';

export const DEFAULT_WAREHOUSE_URL = 'postgres://postgres@127.0.0.1:5432/warehouse';

const schemaName = /^account_[0-9a-f]{32}$/;
export const warehouseTableNames = ['events', 'users', 'groups', 'aliases'] as const;
export type WarehouseTableName = (typeof warehouseTableNames)[number];

/**
 * Read-only access to an account's warehouse schema (`account_<id>`), for the templates that
 * inspect tracked data. The schema name is derived from the account id, never from input.
 */
export class WarehouseReader {
  private readonly pool: Pool;

  constructor(url: string, options: { poolMax?: number; statementTimeoutMs?: number } = {}) {
    this.pool = new Pool({
      connectionString: url,
      max: options.poolMax ?? 3,
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 10_000,
      allowExitOnIdle: true,
      statement_timeout: options.statementTimeoutMs ?? 60_000,
    });
    this.pool.on('error', () => undefined);
  }

  schemaOf(accountId: string): string {
    const schema = warehouseSchemaFor(accountId);
    if (!schemaName.test(schema)) throw new Error('invalid account id for a warehouse schema');
    return schema;
  }

  /** The account's warehouse tables that exist. */
  async existingTables(accountId: string): Promise<WarehouseTableName[]> {
    const { rows } = await this.pool.query<{ table_name: WarehouseTableName }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = ANY($2)',
      [this.schemaOf(accountId), [...warehouseTableNames]],
    );
    const found = new Set(rows.map((r) => r.table_name));
    return warehouseTableNames.filter((t) => found.has(t));
  }

  /** Whether any warehouse table of the account has a row. */
  async hasRows(accountId: string): Promise<boolean> {
    for (const table of await this.existingTables(accountId)) {
      const { rows } = await this.query<{ found: boolean }>(
        `SELECT EXISTS (SELECT 1 FROM ${this.table(accountId, table)}) AS found`,
      );
      if (rows[0]?.found) return true;
    }
    return false;
  }

  /** `"account_…"."<table>"` for a known table name. */
  table(accountId: string, table: WarehouseTableName): string {
    if (!warehouseTableNames.includes(table)) throw new Error(`unknown warehouse table ${String(table)}`);
    return `"${this.schemaOf(accountId)}"."${table}"`;
  }

  /**
   * Runs a query; with a signal, an abort cancels it on the server (pg_cancel_backend), so a
   * cancelled run or a shutting-down worker does not wait for a long scan.
   */
  async query<R extends QueryResultRow>(sql: string, values: unknown[] = [], signal?: AbortSignal) {
    if (!signal) return this.pool.query<R>(sql, values);
    signal.throwIfAborted();
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      const pid = rows[0]?.pid;
      const cancel = () => {
        void this.pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
      };
      signal.addEventListener('abort', cancel, { once: true });
      try {
        return await client.query<R>(sql, values);
      } finally {
        signal.removeEventListener('abort', cancel);
      }
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
