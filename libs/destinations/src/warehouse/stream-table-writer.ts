import type { Pool } from 'pg';
import { quoteIdent } from './warehouse-ddl';
import { warehousePool, withAdvisoryLock, type WarehouseTimeouts } from './warehouse-pool';

type ColumnType = 'text' | 'numeric' | 'boolean' | 'jsonb';

export interface StreamWriteResult {
  /** Rows inserted or updated (a record seen twice in one call counts once). */
  written: number;
  /** Columns added to the table for fields seen for the first time. */
  addedColumns: string[];
}

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;
const MAX_PARAMETERS = 60_000;

function typeOf(value: unknown): ColumnType | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return 'numeric';
  if (typeof value === 'string') return 'text';
  return 'jsonb';
}

/** A field's value as its column stores it; what does not fit stays only in `_raw`. */
function columnValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'numeric':
      if (typeof value === 'number') return Number.isFinite(value) ? value : null;
      return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'jsonb':
      return JSON.stringify(value);
  }
}

const columnTypeOf = (dataType: string): ColumnType =>
  dataType === 'numeric' || dataType === 'boolean' || dataType === 'jsonb' ? dataType : 'text';

/**
 * Loads a source stream's records into a warehouse table of the account's schema: one typed
 * column per top-level field (text, numeric, boolean or jsonb, from the first value seen; new
 * fields add columns as they appear), the whole record in `_raw`, and `_synced_at`. Records are
 * upserted on the stream's primary key, so a re-run never duplicates a row.
 */
export class StreamTableWriter {
  private readonly pool: Pool;
  private readonly columns = new Map<string, Map<string, ColumnType>>();

  constructor(url: string, options: { poolMax?: number; timeouts?: WarehouseTimeouts } = {}) {
    this.pool = warehousePool(url, options.poolMax ?? 3, options.timeouts);
  }

  async write(
    schema: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    if (!identifier.test(schema) || !identifier.test(table) || !identifier.test(primaryKey))
      throw new Error(`invalid warehouse identifier in ${schema}.${table} (${primaryKey})`);
    // One row per key within a statement: PostgreSQL cannot upsert a row twice in one.
    const byKey = new Map<string, Record<string, unknown>>();
    for (const record of records) {
      const key = record[primaryKey];
      if (key === null || key === undefined) throw new Error(`a ${table} record has no ${primaryKey}`);
      byKey.set(String(key), record);
    }
    const unique = [...byKey.values()];
    if (unique.length === 0) return { written: 0, addedColumns: [] };
    const addedColumns = await this.ensureColumns(schema, table, primaryKey, unique);
    const known = this.columns.get(`${schema}.${table}`) ?? new Map<string, ColumnType>();
    const fields = [...known.keys()].filter((c) => c !== primaryKey && !c.startsWith('_'));
    const columns = [primaryKey, ...fields, '_raw'];
    const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
    const target = `${quoteIdent(schema)}.${quoteIdent(table)}`;
    const assignments = [...fields, '_raw'].map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`);
    let written = 0;
    for (let i = 0; i < unique.length; i += perStatement) {
      const values: unknown[] = [];
      const tuples = unique.slice(i, i + perStatement).map((record) => {
        const base = values.length;
        values.push(String(record[primaryKey]));
        for (const field of fields) values.push(columnValue(known.get(field) ?? 'text', record[field]));
        values.push(JSON.stringify(record));
        return `(${columns.map((_, c) => `$${base + c + 1}`).join(', ')}, now())`;
      });
      const result = await this.pool.query(
        `INSERT INTO ${target} (${columns.map(quoteIdent).join(', ')}, _synced_at) VALUES ${tuples.join(', ')} ON CONFLICT (${quoteIdent(primaryKey)}) DO UPDATE SET ${assignments.join(', ')}, _synced_at = now()`,
        values,
      );
      written += result.rowCount ?? 0;
    }
    return { written, addedColumns };
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  /** Creates the table and the columns of fields not seen before, under a lock per table. */
  private async ensureColumns(
    schema: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<string[]> {
    const name = `${schema}.${table}`;
    const wanted = new Map<string, ColumnType>();
    for (const record of records) {
      for (const [field, value] of Object.entries(record)) {
        if (field === primaryKey || !identifier.test(field) || field.startsWith('_') || wanted.has(field))
          continue;
        const type = typeOf(value);
        if (type) wanted.set(field, type);
      }
    }
    const known = this.columns.get(name);
    if (known && [...wanted.keys()].every((field) => known.has(field))) return [];
    return withAdvisoryLock(this.pool, `stream-table:${name}`, async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${quoteIdent(table)} (${quoteIdent(primaryKey)} text PRIMARY KEY, _raw jsonb NOT NULL, _synced_at timestamptz NOT NULL)`,
      );
      const { rows } = await client.query<{ column_name: string; data_type: string }>(
        'SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2',
        [schema, table],
      );
      const existing = new Map(rows.map((r) => [r.column_name, columnTypeOf(r.data_type)]));
      const added: string[] = [];
      for (const [field, type] of wanted) {
        if (existing.has(field)) continue;
        await client.query(
          `ALTER TABLE ${quoteIdent(schema)}.${quoteIdent(table)} ADD COLUMN IF NOT EXISTS ${quoteIdent(field)} ${type}`,
        );
        existing.set(field, type);
        added.push(field);
      }
      this.columns.set(name, existing);
      return added;
    });
  }
}
