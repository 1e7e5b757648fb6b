import { z } from 'zod';
import { envInt } from '@pipeline/config';
import { Pool, type PoolClient } from 'pg';

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

export const warehouseTimeoutsOf = (config: z.infer<typeof warehouseConfigSchema>): WarehouseTimeouts => ({
  statementTimeoutMs: config.WAREHOUSE_STATEMENT_TIMEOUT_MS,
  lockTimeoutMs: config.WAREHOUSE_LOCK_TIMEOUT_MS,
});

/** A connection pool to the warehouse for one writer. */
export function warehousePool(
  url: string,
  max: number,
  timeouts: WarehouseTimeouts = defaultWarehouseTimeouts,
): Pool {
  const pool = new Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: 5000,
    statement_timeout: timeouts.statementTimeoutMs,
    lock_timeout: timeouts.lockTimeoutMs,
  });
  // An idle client's error (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Runs `work` on one connection holding the session advisory lock named `name`, so that
 * processes creating the same schema or table (DDL) take turns. The wait for the lock is
 * bounded by the pool's lock_timeout.
 */
export async function withAdvisoryLock<T>(
  pool: Pool,
  name: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  let locked = false;
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    locked = true;
    return await work(client);
  } finally {
    if (locked) await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]).catch(() => undefined);
    client.release();
  }
}
