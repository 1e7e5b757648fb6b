import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Pool, PoolClient } from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { warehouseTables, type WarehouseRow, type WarehouseTable } from '@pipeline/events';
import { copyText, jsonbText } from '../copy-text';
import { conflictKey, orderColumns, quoteIdent, warehouseMigrations } from './warehouse-ddl';
import { jsonColumns, rowsByTable, rowsToLoad } from '../warehouse-row-batches';
import { copyStatement, isWarehouseSchemaName, upsertFromJson } from './warehouse-statements';
import { warehouseErrorKind } from '../warehouse-errors';
import {
  beginStatement,
  defaultWarehouseTimeouts,
  inWarehouseTransaction,
  warehousePool,
  withTransactionLock,
  type WarehouseTimeouts,
} from '../warehouse-pool';
import type { WriteResult } from '../warehouse-engine';

export type { WriteResult };

/** Rows per COPY when not configured (WAREHOUSE_ROWS_PER_COPY): the fastest in `pnpm bench:warehouse`. */
export const defaultRowsPerCopy = 1000;
const tableNames = Object.keys(warehouseTables) as WarehouseTable[];
/** The columns the writer fills: the table's, and for users and groups the orders of their values. */
const orderColumnsOf: Partial<Record<WarehouseTable, Readonly<Record<string, string>>>> = orderColumns;
const typesOf = Object.fromEntries(
  tableNames.map((table): [WarehouseTable, Record<string, string>] => [
    table,
    { ...warehouseTables[table], ...orderColumnsOf[table] },
  ]),
) as Record<WarehouseTable, Record<string, string>>;
const columnsOf = Object.fromEntries(
  tableNames.map((table) => [table, Object.keys(typesOf[table])]),
) as Record<WarehouseTable, string[]>;
const jsonColumnsOf = Object.fromEntries(
  tableNames.map((table) => [table, jsonColumns(typesOf[table])]),
) as Record<WarehouseTable, Set<string>>;

const uniqueViolation = '23505';

/**
 * COPYs `data` (COPY text of the table's columns) into `target` in a transaction of its own
 * that sets the time limits; returns the rows copied. BEGIN, the limits, the COPY and COMMIT
 * are one query string, so the load costs one round trip, as a bare COPY did: a separate BEGIN
 * and COMMIT made the delivery benchmark slower on a busy machine. PostgreSQL runs the COPY of
 * a multi-statement query like any other, and times each statement on its own.
 */
async function copyInto(
  client: PoolClient,
  target: string,
  table: WarehouseTable,
  data: Buffer,
  timeouts: WarehouseTimeouts,
): Promise<number> {
  const query = copyFrom(`${beginStatement(timeouts)}; ${copyStatement(target, columnsOf[table])}; COMMIT`);
  // pg-copy-streams ends a COPY through its prototype's callback(); OpenTelemetry's pg
  // instrumentation looks only at the query's own properties, and without one it never ends
  // (nor exports) the COPY's span, so the trace would lose the warehouse write.
  const own = query as typeof query & { callback: () => void };
  own.callback = own.callback.bind(query);
  const stream = client.query(query);
  try {
    await pipeline(Readable.from([data]), stream);
  } catch (error) {
    // The statements after a failed one do not run: the transaction is left open, aborted. A
    // ROLLBACK that fails means the connection is gone: that, not the data, is the error.
    await client.query('ROLLBACK');
    throw error;
  }
  return stream.rowCount;
}

/**
 * Loads normalized rows into PostgreSQL: a schema per account with the tables of
 * warehouseTables, by COPY, or by an INSERT of the rows as JSON where they may meet stored
 * ones. Idempotent: an event or alias is stored once per messageId; a user or group once per
 * id, with the values of its newest events (ordered by timestamp, received_at, message_id),
 * so a late event never rolls a row back and the same identify twice changes nothing. Every
 * statement runs in a transaction that sets the time limits itself and leaves nothing behind
 * in the session, so it also works behind PgBouncer in transaction mode.
 */
export class WarehouseWriter {
  private readonly pool: Pool;
  /** A pool handed in is the engine's, shared with its other users: close() leaves it open. */
  private readonly ownsPool: boolean;
  private readonly ready = new Map<string, Promise<void>>();
  private readonly rowsPerCopy: number;
  private readonly timeouts: WarehouseTimeouts;

  constructor(
    target: string | Pool,
    options: { poolMax?: number; timeouts?: WarehouseTimeouts; rowsPerCopy?: number } = {},
  ) {
    this.ownsPool = typeof target === 'string';
    this.pool = typeof target === 'string' ? warehousePool(target, options.poolMax ?? 5) : target;
    this.timeouts = options.timeouts ?? defaultWarehouseTimeouts;
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

  /** Forgets that the schema was migrated (it was dropped): the next write creates it again. */
  forget(schema: string): void {
    this.ready.delete(schema);
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
   * Loads rows of one table; returns how many were new or changed.
   *
   * Events and aliases are first copied straight into the account's table: the usual case, a
   * batch never stored before, then costs what a raw COPY costs. A COPY is all or nothing, so
   * when one of its rows is already there (a redelivered batch, or a messageId twice in it:
   * 23505) nothing of it stays, and the rows go the upsert way below, which skips them.
   * Users and groups, merged into the existing row, always go the upsert way.
   */
  private async load(
    schema: string,
    table: WarehouseTable,
    rows: Record<string, unknown>[],
  ): Promise<number> {
    const byCopy = conflictKey[table] === 'message_id';
    // Serialized before a connection is taken: a value JSON cannot represent fails the rows alone.
    const data = byCopy
      ? Buffer.from(copyText(rows, columnsOf[table], jsonColumnsOf[table]))
      : jsonbText(rows);
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      if (byCopy) {
        try {
          return await copyInto(
            client,
            `${quoteIdent(schema)}.${quoteIdent(table)}`,
            table,
            data as Buffer,
            this.timeouts,
          );
        } catch (error) {
          if ((error as { code?: unknown }).code !== uniqueViolation) throw error;
        }
      }
      const json = typeof data === 'string' ? data : jsonbText(rows);
      return await inWarehouseTransaction(client, this.timeouts, async () => {
        const result = await client.query(
          upsertFromJson(schema, table, columnsOf[table], conflictKey[table]),
          [json],
        );
        return result.rowCount ?? 0;
      });
    } catch (error) {
      // A connection lost mid-COPY is not given back to the pool for the next batch.
      if (warehouseErrorKind(error) === 'unavailable') broken = error as Error;
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** All pending steps in one transaction, under the schema's transaction-level lock. */
  private migrate(schema: string): Promise<void> {
    return withTransactionLock(this.pool, this.timeouts, `warehouse:${schema}`, async (client) => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}._migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await client.query<{ version: number }>(
        `SELECT version FROM ${quoteIdent(schema)}._migrations`,
      );
      const applied = new Set(rows.map((r) => r.version));
      for (const migration of warehouseMigrations.filter((m) => !applied.has(m.version))) {
        for (const statement of migration.statements(schema)) await client.query(statement);
        await client.query(`INSERT INTO ${quoteIdent(schema)}._migrations (version) VALUES ($1)`, [
          migration.version,
        ]);
      }
    });
  }
}
