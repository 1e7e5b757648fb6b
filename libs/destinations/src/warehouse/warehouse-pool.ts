import { Pool, type PoolClient } from 'pg';

/** A connection pool to the warehouse for one writer. */
export function warehousePool(url: string, max: number): Pool {
  const pool = new Pool({ connectionString: url, max, connectionTimeoutMillis: 5000 });
  // An idle client's error (server restart) must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Runs `work` on one connection holding the session advisory lock named `name`, so that
 * processes creating the same schema or table (DDL) take turns.
 */
export async function withAdvisoryLock<T>(
  pool: Pool,
  name: string,
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    return await work(client);
  } finally {
    await client.query('SELECT pg_advisory_unlock(hashtext($1))', [name]).catch(() => undefined);
    client.release();
  }
}
