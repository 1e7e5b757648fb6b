import type { Pool } from 'pg';
import { warehouseTables, type WarehouseRow, type WarehouseTable } from '@pipeline/events';
import { conflictKey, quoteIdent, warehouseMigrations } from './warehouse-ddl';
import { warehousePool, withAdvisoryLock, type WarehouseTimeouts } from './warehouse-pool';

export interface WriteResult {
  /** Rows that were new, or that changed an existing user or group. */
  written: number;
  /** Rows already present (redelivery): nothing changed. */
  duplicates: number;
}

const ROWS_PER_STATEMENT = 500;
const schemaName = /^[a-z_][a-z0-9_]{0,62}$/;

/**
 * Loads normalized rows into PostgreSQL: a schema per account with the tables of
 * warehouseTables. Idempotent: an event or alias is stored once per messageId; a user or group
 * once per id, with traits merged (the same identify twice changes nothing).
 */
export class WarehouseWriter {
  private readonly pool: Pool;
  private readonly ready = new Map<string, Promise<void>>();

  constructor(url: string, options: { poolMax?: number; timeouts?: WarehouseTimeouts } = {}) {
    this.pool = warehousePool(url, options.poolMax ?? 5, options.timeouts);
  }

  /** Creates the schema and applies its pending migrations, once per process, under a lock. */
  ensureSchema(schema: string): Promise<void> {
    if (!schemaName.test(schema)) return Promise.reject(new Error(`invalid warehouse schema name ${schema}`));
    let pending = this.ready.get(schema);
    if (!pending) {
      pending = this.migrate(schema).catch((error: unknown) => {
        this.ready.delete(schema);
        throw error;
      });
      this.ready.set(schema, pending);
    }
    return pending;
  }

  async write(schema: string, rows: readonly WarehouseRow[]): Promise<WriteResult> {
    await this.ensureSchema(schema);
    const result: WriteResult = { written: 0, duplicates: 0 };
    const byTable = new Map<WarehouseTable, Record<string, unknown>[]>();
    for (const { table, row } of rows) {
      const tableRows = byTable.get(table);
      if (tableRows) tableRows.push(row);
      else byTable.set(table, [row]);
    }
    for (const [table, tableRows] of byTable) {
      const prepared =
        conflictKey[table] === 'message_id' ? tableRows : mergeById(tableRows, conflictKey[table]);
      let written = 0;
      for (let i = 0; i < prepared.length; i += ROWS_PER_STATEMENT) {
        written += await this.insert(schema, table, prepared.slice(i, i + ROWS_PER_STATEMENT));
      }
      result.written += written;
      result.duplicates += tableRows.length - written;
    }
    return result;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  private async insert(
    schema: string,
    table: WarehouseTable,
    rows: Record<string, unknown>[],
  ): Promise<number> {
    const columns = Object.keys(warehouseTables[table]);
    const types = warehouseTables[table] as Record<string, string>;
    const values: unknown[] = [];
    const tuples = rows.map((row) => {
      const placeholders = columns.map((column) => {
        const value = row[column] ?? null;
        values.push(value !== null && types[column] === 'jsonb' ? jsonbText(value) : value);
        return `$${values.length}`;
      });
      return `(${placeholders.join(', ')})`;
    });
    const key = conflictKey[table];
    const target = `${quoteIdent(schema)}.${quoteIdent(table)}`;
    let onConflict = 'DO NOTHING';
    if (key !== 'message_id') {
      // Latest values win, traits merge; unchanged rows are not rewritten (so they count as duplicates).
      const assignments = columns
        .filter((c) => c !== key)
        .map((c) =>
          c === 'traits'
            ? `traits = COALESCE(${target}.traits, '{}'::jsonb) || EXCLUDED.traits`
            : `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`,
        );
      onConflict = `DO UPDATE SET ${assignments.join(', ')} WHERE ${target}.message_id IS DISTINCT FROM EXCLUDED.message_id`;
    }
    const sql = `INSERT INTO ${target} (${columns.map(quoteIdent).join(', ')}) VALUES ${tuples.join(', ')} ON CONFLICT (${quoteIdent(key)}) ${onConflict}`;
    const result = await this.pool.query(sql, values);
    return result.rowCount ?? 0;
  }

  private migrate(schema: string): Promise<void> {
    return withAdvisoryLock(this.pool, `warehouse:${schema}`, async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}._migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM ${quoteIdent(schema)}._migrations`,
      );
      const applied = new Set(rows.map((r) => r.version));
      for (const migration of warehouseMigrations.filter((m) => !applied.has(m.version))) {
        await client.query('BEGIN');
        try {
          for (const statement of migration.statements(schema)) await client.query(statement);
          await client.query(`INSERT INTO ${quoteIdent(schema)}._migrations (version) VALUES ($1)`, [
            migration.version,
          ]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
    });
  }
}

/** A value PostgreSQL would refuse as data: reported with SQLSTATE 22000 like PostgreSQL's own. */
class UnserializableValue extends Error {
  readonly code = '22000';
}

function jsonbText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (error) {
    // Too deep for JSON.stringify's stack, or a cycle: only a record that skipped the door.
    throw new UnserializableValue(`value cannot be serialized as JSON: ${(error as Error).message}`);
  }
}

/** One row per id within a statement (PostgreSQL cannot upsert a row twice in one): traits merged, latest wins. */
function mergeById(rows: Record<string, unknown>[], key: string): Record<string, unknown>[] {
  const merged = new Map<unknown, Record<string, unknown>>();
  for (const row of rows) {
    const previous = merged.get(row[key]);
    const traits = {
      ...((previous?.traits as object | undefined) ?? {}),
      ...((row.traits as object | undefined) ?? {}),
    };
    merged.set(row[key], { ...row, traits });
  }
  return [...merged.values()];
}
