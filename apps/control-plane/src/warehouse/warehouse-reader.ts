import { Pool, type PoolClient, type QueryResultRow } from 'pg';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { warehouseUnavailable } from '../http/api-errors';
import type { MeteredPurpose, QueryMeter } from './query-meter';

export const DEFAULT_WAREHOUSE_URL = 'postgres://postgres@127.0.0.1:5432/warehouse';

const schemaName = /^account_[0-9a-f]{32}$/;
export const warehouseTableNames = ['events', 'users', 'groups', 'aliases'] as const;
export type WarehouseTableName = (typeof warehouseTableNames)[number];

// Socket errors of a connection that could not be made or was lost.
const unreachableErrnos = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
// SQLSTATEs of a warehouse that is not there for us: class 08 (connection exception), 28
// (authentication), 3D000 (the database does not exist), 53300 (too many connections), and
// 57P01-57P03 (shut down, crashed, starting up).
const unavailableStates = /^(08...|28...|3D000|53300|57P0[123])$/;
// pg and pg-pool report a connect timeout or a dropped connection without a code.
const unavailableMessages = /timeout exceeded when trying to connect|Connection terminated/i;

/**
 * Whether a pg error means the warehouse could not be used at all, as opposed to a query that
 * failed (a syntax error, a statement timeout): those stay errors of their own.
 */
export function isWarehouseConnectionFailure(error: unknown): boolean {
  // Read as a shape, not with instanceof: socket errors may come from another realm (a VM
  // context) whose Error is not this one's.
  if (error === null || typeof error !== 'object') return false;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  // An AggregateError: every address of the host was tried (IPv4 and IPv6) and refused.
  if (Array.isArray(errors) && errors.some(isWarehouseConnectionFailure)) return true;
  if (typeof code === 'string' && (unreachableErrnos.has(code) || unavailableStates.test(code))) return true;
  return typeof message === 'string' && unavailableMessages.test(message);
}

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
    const schema = warehouseSchemaFor(accountId);
    if (!schemaName.test(schema)) throw new Error('invalid account id for a warehouse schema');
    return schema;
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
    if (!/^[a-z][a-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid stream table name ${name}`);
    const { rows } = await this.poolQuery(
      'SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
      [this.schemaOf(accountId), name],
    );
    return rows.length > 0 ? `"${this.schemaOf(accountId)}"."${name}"` : null;
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
            client.query<R>(`FETCH FORWARD ${Math.max(1, Math.floor(batchRows))} FROM batches`),
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
