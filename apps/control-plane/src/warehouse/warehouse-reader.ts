import { Pool, type PoolClient, type QueryResultRow } from 'pg';
import { warehouseUnavailable } from '../http/api-errors';
import { isWarehouseConnectionFailure } from './connection-failure';
import type { MeteredPurpose, QueryMeter } from './query-meter';
import {
  checkStreamTableName,
  cursorFetchRows,
  streamTableOf,
  warehouseSchemaOf,
  warehouseTable,
  warehouseTableNames,
  type WarehouseTableName,
} from './warehouse-names';

export const DEFAULT_WAREHOUSE_URL = 'postgres://postgres@127.0.0.1:5432/warehouse';

/** A connection failure as the documented 503 `warehouse_unavailable`; other errors unchanged. */
function asWarehouseError(error: unknown): unknown {
  return isWarehouseConnectionFailure(error) ? warehouseUnavailable(error) : error;
}

/**
 * Read-only access to an account's warehouse schema (`account_<id>`), for the templates that
 * inspect tracked data and the service's own reads; account queries are metered for usage. The schema name is derived from the account id, never from input.
 * A missing or unreachable warehouse is thrown as the AppError `warehouse_unavailable` (503),
 * which the API renders and the task and integration runs record as their error code.
 */
export class WarehouseReader {
  private readonly pool: Pool;

  private readonly meter: QueryMeter | undefined;

  constructor(
    url: string,
    options: { poolMax?: number; statementTimeoutMs?: number; meter?: QueryMeter } = {},
  ) {
    this.meter = options.meter;
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
    return warehouseSchemaOf(accountId);
  }

  /** The account's warehouse tables that exist. */
  async existingTables(accountId: string): Promise<WarehouseTableName[]> {
    const { rows } = await this.poolQuery<{ table_name: WarehouseTableName }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = ANY($2)',
      [this.schemaOf(accountId), [...warehouseTableNames]],
    );
    const found = new Set(rows.map((r) => r.table_name));
    return warehouseTableNames.filter((t) => found.has(t));
  }

  /** Whether any warehouse table of the account has a row. */
  async hasRows(accountId: string): Promise<boolean> {
    for (const table of await this.existingTables(accountId)) {
      const { rows } = await this.accountQuery<{ found: boolean }>(
        accountId,
        'query',
        `SELECT EXISTS (SELECT 1 FROM ${this.table(accountId, table)}) AS found`,
      );
      if (rows[0]?.found) return true;
    }
    return false;
  }

  /**
   * `"account_…"."<app type>_<stream>"`, a source stream's table, or null when no sync has
   * created it yet. The name is checked as an identifier and must exist in the schema.
   */
  async streamTable(accountId: string, name: string): Promise<string | null> {
    const { rows } = await this.poolQuery(
      'SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
      [this.schemaOf(accountId), checkStreamTableName(name)],
    );
    return rows.length > 0 ? streamTableOf(accountId, name) : null;
  }

  /** `"account_…"."<table>"` for a known table name. */
  table(accountId: string, table: WarehouseTableName): string {
    return warehouseTable(accountId, table);
  }

  /**
   * Runs a query; with a signal, an abort cancels it on the server (pg_cancel_backend), so a
   * cancelled run or a shutting-down worker does not wait for a long scan.
   */
  async query<R extends QueryResultRow>(sql: string, values: unknown[] = [], signal?: AbortSignal) {
    if (!signal) return this.poolQuery<R>(sql, values);
    signal.throwIfAborted();
    const client = await this.connect();
    try {
      return await this.cancellable(client, signal, () => client.query<R>(sql, values));
    } catch (error) {
      throw asWarehouseError(error);
    } finally {
      client.release();
    }
  }

  private async poolQuery<R extends QueryResultRow>(sql: string, values: unknown[]) {
    try {
      return await this.pool.query<R>(sql, values);
    } catch (error) {
      throw asWarehouseError(error);
    }
  }

  private async connect(): Promise<PoolClient> {
    try {
      return await this.pool.connect();
    } catch (error) {
      throw asWarehouseError(error);
    }
  }

  /**
   * Bytes of the schema's tables and indexes read through this backend's pending statistics.
   * PostgreSQL flushes those at most once a second outside a transaction, so they can carry
   * earlier transactions' reads: callers take the difference across their own transaction.
   */
  private async bytesFetched(client: PoolClient, schema: string): Promise<number> {
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT COALESCE(sum(pg_stat_get_xact_blocks_fetched(c.oid)), 0)
              * current_setting('block_size')::bigint AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1`,
      [schema],
    );
    return Number(rows[0]?.bytes ?? 0);
  }

  /** Runs `run` on the client; an abort of the signal cancels its statement on the server. */
  private async cancellable<T>(client: PoolClient, signal: AbortSignal | undefined, run: () => Promise<T>) {
    if (!signal) return run();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const pid = rows[0]?.pid;
    const cancel = () => {
      void this.pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
    };
    signal.addEventListener('abort', cancel, { once: true });
    try {
      return await run();
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  /**
   * Runs a query over the account's schema and meters the bytes it processed: in one read-only
   * transaction, the growth of PostgreSQL's block counters (pg_stat_get_xact_blocks_fetched:
   * every block of the schema's tables and indexes the query asked the buffer manager for,
   * from cache or disk) times the block size. Measured, not estimated from row counts.
   */
  async accountQuery<R extends QueryResultRow>(
    accountId: string,
    purpose: MeteredPurpose,
    sql: string,
    values: unknown[] = [],
    signal?: AbortSignal,
  ) {
    const schema = this.schemaOf(accountId);
    signal?.throwIfAborted();
    const client = await this.connect();
    let bytes = 0;
    try {
      await client.query('BEGIN READ ONLY');
      try {
        const before = await this.bytesFetched(client, schema);
        const result = await this.cancellable(client, signal, () => client.query<R>(sql, values));
        bytes = (await this.bytesFetched(client, schema)) - before;
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } catch (error) {
      throw asWarehouseError(error);
    } finally {
      client.release();
      if (bytes > 0 && this.meter) await this.meter.record(accountId, purpose, bytes);
    }
  }

  /**
   * Streams a query over the account's schema in batches of `batchRows`, through a cursor in
   * one read-only transaction: one scan and sort however many batches, where keyset pages
   * would rescan the table per page. The transaction stays open while the caller handles a
   * batch; its bytes are metered when the iteration ends, broken off or failed.
   */
  async *accountBatches<R extends QueryResultRow>(
    accountId: string,
    purpose: MeteredPurpose,
    sql: string,
    values: unknown[],
    batchRows: number,
    signal?: AbortSignal,
  ): AsyncGenerator<R[]> {
    const schema = this.schemaOf(accountId);
    signal?.throwIfAborted();
    const client = await this.connect();
    let bytes = 0;
    let before = 0;
    let open = false;
    // Only the warehouse's own errors are translated: what the caller throws while handling a
    // batch does not come back through here (a broken-off for-await returns the generator).
    const onWarehouse = async <T>(run: () => Promise<T>): Promise<T> => {
      try {
        return await run();
      } catch (error) {
        throw asWarehouseError(error);
      }
    };
    try {
      await onWarehouse(() => client.query('BEGIN READ ONLY'));
      open = true;
      before = await onWarehouse(() => this.bytesFetched(client, schema));
      await onWarehouse(() =>
        this.cancellable(client, signal, () =>
          client.query(`DECLARE batches NO SCROLL CURSOR FOR ${sql}`, values),
        ),
      );
      for (;;) {
        const { rows } = await onWarehouse(() =>
          this.cancellable(client, signal, () =>
            client.query<R>(`FETCH FORWARD ${cursorFetchRows(batchRows)} FROM batches`),
          ),
        );
        if (rows.length === 0) break;
        yield rows;
        if (rows.length < batchRows) break;
      }
    } finally {
      if (open) {
        try {
          bytes = (await this.bytesFetched(client, schema)) - before;
          await client.query('COMMIT');
        } catch {
          await client.query('ROLLBACK').catch(() => undefined);
        }
      }
      client.release();
      if (bytes > 0 && this.meter) await this.meter.record(accountId, purpose, bytes);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
