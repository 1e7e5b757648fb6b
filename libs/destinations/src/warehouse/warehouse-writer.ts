import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Pool, PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { warehouseTables, type WarehouseRow, type WarehouseTable } from '@pipeline/events';
import { copyText } from './copy-text';
import { conflictKey, quoteIdent, warehouseMigrations } from './warehouse-ddl';
import { jsonColumns, rowsByTable, rowsToLoad } from './warehouse-row-batches';
import {
  copyStatement,
  isWarehouseSchemaName,
  stagingName,
  stagingTablesStatement,
  upsertFromStaging,
} from './warehouse-statements';
import { warehouseErrorKind } from './warehouse-errors';
import { warehousePool, withAdvisoryLock, type WarehouseTimeouts } from './warehouse-pool';
import type { WriteResult } from './warehouse-engine';

export type { WriteResult };

/** Rows per COPY when not configured (WAREHOUSE_ROWS_PER_COPY): the fastest in `pnpm bench:warehouse`. */
export const defaultRowsPerCopy = 1000;
const tableNames = Object.keys(warehouseTables) as WarehouseTable[];
const columnsOf = Object.fromEntries(
  tableNames.map((table) => [table, Object.keys(warehouseTables[table])]),
) as Record<WarehouseTable, string[]>;
const jsonColumnsOf = Object.fromEntries(
  tableNames.map((table) => [table, jsonColumns(warehouseTables[table])]),
) as Record<WarehouseTable, Set<string>>;

const uniqueViolation = '23505';

/** COPYs `data` (COPY text of the table's columns) into `target`; returns the rows copied. */
async function copyInto(
  client: PoolClient,
  target: string,
  table: WarehouseTable,
  data: Buffer,
): Promise<number> {
  const query = copyFrom(copyStatement(target, columnsOf[table]));
  // pg-copy-streams ends a COPY through its prototype's callback(); OpenTelemetry's pg
  // instrumentation looks only at the query's own properties, and without one it never ends
  // (nor exports) the COPY's span, so the trace would lose the warehouse write.
  const own = query as typeof query & { callback: () => void };
  own.callback = own.callback.bind(query);
  const stream = client.query(query);
  await pipeline(Readable.from([data]), stream);
  return stream.rowCount;
}

const stagingTables = stagingTablesStatement(warehouseTables);

/**
 * Loads normalized rows into PostgreSQL: a schema per account with the tables of
 * warehouseTables, by COPY into a staging table and an INSERT from it. Idempotent: an event or alias is stored once per messageId; a user or group
 * once per id, with traits merged (the same identify twice changes nothing).
 */
export class WarehouseWriter {
  private readonly pool: Pool;
  /** A pool handed in is the engine's, shared with its other users: close() leaves it open. */
  private readonly ownsPool: boolean;
  private readonly ready = new Map<string, Promise<void>>();
  private readonly rowsPerCopy: number;
  /** Connections whose staging tables exist (temporary tables live as long as their session). */
  private readonly staged = new WeakSet<PoolClient>();

  constructor(
    target: string | Pool,
    options: { poolMax?: number; timeouts?: WarehouseTimeouts; rowsPerCopy?: number } = {},
  ) {
    this.ownsPool = typeof target === 'string';
    this.pool =
      typeof target === 'string' ? warehousePool(target, options.poolMax ?? 5, options.timeouts) : target;
    this.rowsPerCopy = options.rowsPerCopy ?? defaultRowsPerCopy;
  }

  /** Creates the schema and applies its pending migrations, once per process, under a lock. */
  ensureSchema(schema: string): Promise<void> {
    if (!isWarehouseSchemaName(schema))
      return Promise.reject(new Error(`invalid warehouse schema name ${schema}`));
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
    for (const [table, tableRows] of rowsByTable(rows)) {
      const prepared = rowsToLoad(tableRows, conflictKey[table]);
      let written = 0;
      for (let i = 0; i < prepared.length; i += this.rowsPerCopy) {
        written += await this.load(schema, table, prepared.slice(i, i + this.rowsPerCopy));
      }
      result.written += written;
      result.duplicates += tableRows.length - written;
    }
    return result;
  }

  async close(): Promise<void> {
    if (this.ownsPool) await this.pool.end();
  }

  /**
   * Loads rows of one table by COPY; returns how many were new or changed.
   *
   * Events and aliases are first copied straight into the account's table: the usual case, a
   * batch never stored before, then costs what a raw COPY costs. A COPY is all or nothing, so
   * when one of its rows is already there (a redelivered batch, or a messageId twice in it:
   * 23505) nothing of it stays, and the rows go the staging way below, which skips them.
   * Users and groups, merged into the existing row, always go the staging way.
   */
  private async load(
    schema: string,
    table: WarehouseTable,
    rows: Record<string, unknown>[],
  ): Promise<number> {
    // Serialized before a connection is taken: a value JSON cannot represent fails the rows alone.
    const data = Buffer.from(copyText(rows, columnsOf[table], jsonColumnsOf[table]));
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      if (conflictKey[table] === 'message_id') {
        try {
          return await copyInto(client, `${quoteIdent(schema)}.${quoteIdent(table)}`, table, data);
        } catch (error) {
          if ((error as { code?: unknown }).code !== uniqueViolation) throw error;
        }
      }
      return await this.loadThroughStaging(client, schema, table, data);
    } catch (error) {
      // A connection lost mid-COPY is not given back to the pool for the next batch.
      if (warehouseErrorKind(error) === 'unavailable') broken = error as Error;
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * One COPY into the connection's staging table, then one INSERT from it into the account's
   * table, in one transaction: a row whose key is already there changes nothing.
   */
  private async loadThroughStaging(
    client: PoolClient,
    schema: string,
    table: WarehouseTable,
    data: Buffer,
  ): Promise<number> {
    if (!this.staged.has(client)) {
      await client.query(stagingTables);
      this.staged.add(client);
    }
    await client.query('BEGIN');
    try {
      await copyInto(client, stagingName(table), table, data);
      const result = await client.query(
        upsertFromStaging(schema, table, columnsOf[table], conflictKey[table]),
      );
      await client.query('COMMIT');
      return result.rowCount ?? 0;
    } catch (error) {
      // A ROLLBACK that fails means the connection is gone: that, not the data, is the error.
      await client.query('ROLLBACK');
      throw error;
    }
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
