import { z } from 'zod';
import { envInt } from '@pipeline/config';
import { parseJsonText } from '@pipeline/events';
import { quietOnLostConnections } from '@pipeline/postgres';
import { Pool, types, type PoolClient } from 'pg';
import { warehouseErrorKind } from './warehouse-errors';

// json and jsonb values (traits, properties, context) are read with parseJsonText, not
// JSON.parse, which V8 can make rename an escaped key (see parseJsonText). pg's type parsers are
// the process's: every pool and client of it reads them so once this module is loaded.
types.setTypeParser(types.builtins.JSON, parseJsonText);
types.setTypeParser(types.builtins.JSONB, parseJsonText);

/** Time limits of every warehouse connection (docs/configuration.md). */
export interface WarehouseTimeouts {
  /** A statement running longer is cancelled (57014) and its batch tried again later. */
  statementTimeoutMs: number;
  /** A wait for a lock, advisory locks of schema migrations included, is given up (55P03). */
  lockTimeoutMs: number;
}

export const defaultWarehouseTimeouts: WarehouseTimeouts = {
  statementTimeoutMs: 60_000,
  lockTimeoutMs: 30_000,
};

/** A ClickHouse cluster name as WAREHOUSE_CLICKHOUSE_CLUSTER takes it: never quoted text. */
export const clickhouseClusterPattern = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/;

/** The warehouse settings every service that writes to it reads. */
export const warehouseConfigSchema = z.object({
  WAREHOUSE_STATEMENT_TIMEOUT_MS: envInt({ min: 100, max: 3_600_000, default: 60_000 }).describe(
    "A warehouse statement's time limit; past it the write ends as an infrastructure error and the batch is tried again.",
  ),
  WAREHOUSE_LOCK_TIMEOUT_MS: envInt({ min: 100, max: 3_600_000, default: 30_000 }).describe(
    'The longest wait for a lock in the warehouse (the advisory lock of schema migrations included); past it the batch is tried again.',
  ),
  WAREHOUSE_PROCESS_MAX_CONNECTIONS: envInt({ min: 1, max: 10_000, default: 20 }).describe(
    "Warehouse connections one process may hold, all warehouses together. A warehouse's pool opens with at most its own connection limit and half of what is still free.",
  ),
  WAREHOUSE_POOL_IDLE_MS: envInt({ min: 100, max: 86_400_000, default: 60_000 }).describe(
    "A warehouse connection unused this long is closed, and so is a warehouse's whole pool, giving its share of WAREHOUSE_PROCESS_MAX_CONNECTIONS back.",
  ),
  WAREHOUSE_CLICKHOUSE_CLUSTER: z
    .string()
    .regex(
      clickhouseClusterPattern,
      'expected a cluster name: letters, digits, _ and -, 1 to 128 characters, starting with a letter or _',
    )
    .optional()
    .describe(
      "ClickHouse warehouses: the cluster (a name of the servers' `remote_servers`) their databases and tables are created on, with `ON CLUSTER`. Unset: on the server connected to only.",
    ),
});

/** How many warehouse connections a process holds, and for how long unused ones stay open. */
export interface WarehousePoolLimits {
  processMaxConnections: number;
  idleMs: number;
}

export const warehousePoolLimitsOf = (
  config: z.infer<typeof warehouseConfigSchema>,
): WarehousePoolLimits => ({
  processMaxConnections: config.WAREHOUSE_PROCESS_MAX_CONNECTIONS,
  idleMs: config.WAREHOUSE_POOL_IDLE_MS,
});

/** The ClickHouse engine's settings of the warehouse config (WAREHOUSE_CLICKHOUSE_CLUSTER). */
export const clickhouseSettingsOf = (config: z.infer<typeof warehouseConfigSchema>): { cluster?: string } =>
  config.WAREHOUSE_CLICKHOUSE_CLUSTER ? { cluster: config.WAREHOUSE_CLICKHOUSE_CLUSTER } : {};

export const warehouseTimeoutsOf = (config: z.infer<typeof warehouseConfigSchema>): WarehouseTimeouts => ({
  statementTimeoutMs: config.WAREHOUSE_STATEMENT_TIMEOUT_MS,
  lockTimeoutMs: config.WAREHOUSE_LOCK_TIMEOUT_MS,
});

/**
 * A connection pool to the warehouse for one writer. The time limits are not startup
 * parameters of its connections: PgBouncer refuses a connection that sends them, and in
 * transaction mode a session setting would not follow the client from one transaction to the
 * next. Every unit of work sets them for its own transaction instead (inWarehouseTransaction).
 */
export function warehousePool(url: string, max: number): Pool {
  const pool = new Pool({ connectionString: url, max, connectionTimeoutMillis: 5000 });
  quietOnLostConnections(pool);
  return pool;
}

const milliseconds = (value: number, name: string): number => {
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${name} must be a whole number of ms`);
  return value;
};

/**
 * The statement that opens a transaction with the warehouse's time limits: one round trip, and
 * the limits end with the transaction, so behind PgBouncer in transaction mode they never reach
 * another client's transaction.
 */
export const beginStatement = (timeouts: WarehouseTimeouts): string =>
  `BEGIN; SET LOCAL statement_timeout = ${milliseconds(timeouts.statementTimeoutMs, 'statementTimeoutMs')}; SET LOCAL lock_timeout = ${milliseconds(timeouts.lockTimeoutMs, 'lockTimeoutMs')}`;

/**
 * Runs `work` in one transaction on `client`, with the time limits: committed when it returns,
 * rolled back when it throws.
 */
export async function inWarehouseTransaction<T>(
  client: PoolClient,
  timeouts: WarehouseTimeouts,
  work: () => Promise<T>,
): Promise<T> {
  await client.query(beginStatement(timeouts));
  let result: T;
  try {
    result = await work();
  } catch (error) {
    // A ROLLBACK that fails means the connection is gone: that, not the data, is the error.
    await client.query('ROLLBACK');
    throw error;
  }
  await client.query('COMMIT');
  return result;
}

/**
 * Runs `work` in one transaction holding the transaction-level advisory lock named `name`, so
 * that processes creating the same schema or table (DDL) take turns, and the DDL commits with
 * the lock's release. No session state: it works behind PgBouncer in transaction mode, where
 * a session lock could be taken on one server connection and released on another. The wait for
 * the lock is bounded by lock_timeout (55P03).
 */
export async function withTransactionLock<T>(
  pool: Pool,
  timeouts: WarehouseTimeouts,
  name: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    return await inWarehouseTransaction(client, timeouts, async () => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [name]);
      return work(client);
    });
  } catch (error) {
    if (warehouseErrorKind(error) === 'unavailable') broken = error as Error;
    throw error;
  } finally {
    client.release(broken);
  }
}
