import type { Pool } from 'pg';
import {
  columnTypeOf,
  isPlainIdentifier,
  recordsPerStatement,
  uniqueByKey,
  upsertStatement,
  upsertValues,
  wantedColumns,
  type ColumnType,
} from '../stream-table-columns';
import { quoteIdent } from './warehouse-ddl';
import { warehouseErrorKind } from '../warehouse-errors';
import {
  defaultWarehouseTimeouts,
  inWarehouseTransaction,
  warehousePool,
  withTransactionLock,
  type WarehouseTimeouts,
} from '../warehouse-pool';
import type { StreamWriteResult } from '../warehouse-engine';

export type { StreamWriteResult };

/**
 * Loads a source stream's records into a warehouse table of the account's schema: one typed
 * column per top-level field (text, numeric, boolean or jsonb, from the first value seen; new
 * fields add columns as they appear), the whole record in `_raw`, and `_synced_at`. Records are
 * upserted on the stream's primary key, so a re-run never duplicates a row.
 */
export class StreamTableWriter {
  private readonly pool: Pool;
  /** A pool handed in is the engine's, shared with its other users: close() leaves it open. */
  private readonly ownsPool: boolean;
  private readonly columns = new Map<string, Map<string, ColumnType>>();
  private readonly timeouts: WarehouseTimeouts;

  constructor(target: string | Pool, options: { poolMax?: number; timeouts?: WarehouseTimeouts } = {}) {
    this.ownsPool = typeof target === 'string';
    this.pool = typeof target === 'string' ? warehousePool(target, options.poolMax ?? 3) : target;
    this.timeouts = options.timeouts ?? defaultWarehouseTimeouts;
  }

  async write(
    schema: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    if (!isPlainIdentifier(schema) || !isPlainIdentifier(table) || !isPlainIdentifier(primaryKey))
      throw new Error(`invalid warehouse identifier in ${schema}.${table} (${primaryKey})`);
    const unique = uniqueByKey(table, primaryKey, records);
    if (unique.length === 0) return { written: 0, addedColumns: [] };
    const addedColumns = await this.ensureColumns(schema, table, primaryKey, unique);
    const known = this.columns.get(`${schema}.${table}`) ?? new Map<string, ColumnType>();
    const fields = [...known.keys()].filter((c) => c !== primaryKey && !c.startsWith('_'));
    const perStatement = recordsPerStatement(fields.length + 2);
    // One transaction: its time limits are set with it, and a failed call leaves no part behind.
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      const written = await inWarehouseTransaction(client, this.timeouts, async () => {
        let count = 0;
        for (let i = 0; i < unique.length; i += perStatement) {
          const chunk = unique.slice(i, i + perStatement);
          const result = await client.query(
            upsertStatement(schema, table, primaryKey, fields, chunk.length),
            chunk.flatMap((record) => upsertValues(record, primaryKey, fields, known)),
          );
          count += result.rowCount ?? 0;
        }
        return count;
      });
      return { written, addedColumns };
    } catch (error) {
      // A connection lost mid-write is not given back to the pool.
      if (warehouseErrorKind(error) === 'unavailable') broken = error as Error;
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** Forgets the schema's tables (it was dropped): the next write creates them again. */
  forget(schema: string): void {
    for (const name of [...this.columns.keys()]) if (name.startsWith(`${schema}.`)) this.columns.delete(name);
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  /**
   * Creates the table and the columns of fields not seen before, in one transaction under the
   * schema's transaction-level lock.
   */
  private async ensureColumns(
    schema: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<string[]> {
    const name = `${schema}.${table}`;
    const wanted = wantedColumns(primaryKey, records);
    const known = this.columns.get(name);
    if (known && [...wanted.keys()].every((field) => known.has(field))) return [];
    // The schema's lock, the one its migrations take: a schema created by both at once would
    // otherwise fail one of them (23505 on pg_namespace) when the first commits.
    const { existing, added } = await withTransactionLock(
      this.pool,
      this.timeouts,
      `warehouse:${schema}`,
      async (client) => {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${quoteIdent(table)} (${quoteIdent(primaryKey)} text PRIMARY KEY, _raw jsonb NOT NULL, _synced_at timestamptz NOT NULL)`,
        );
        const { rows } = await client.query<{ column_name: string; data_type: string }>(
          'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
          [schema, table],
        );
        const columns = new Map(rows.map((r) => [r.column_name, columnTypeOf(r.data_type)]));
        const missing: string[] = [];
        for (const [field, type] of wanted) {
          if (columns.has(field)) continue;
          await client.query(
            `ALTER TABLE ${quoteIdent(schema)}.${quoteIdent(table)} ADD COLUMN IF NOT EXISTS ${quoteIdent(field)} ${type}`,
          );
          columns.set(field, type);
          missing.push(field);
        }
        return { existing: columns, added: missing };
      },
    );
    // Remembered once committed: a rolled back ALTER must be tried again.
    this.columns.set(name, existing);
    return added;
  }
}
