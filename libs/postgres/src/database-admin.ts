import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/** The database a connection URL names. */
export function databaseName(url: string): string {
  const name = decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
  if (!name) throw new Error('The database URL names no database');
  return name;
}

/** The same server and credentials, another database. */
export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

async function withMaintenanceClient<T>(url: string, fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: withDatabase(url, 'postgres') });
  // A server that restarts or terminates the session fails the query in hand; node-postgres
  // also emits 'error', which would end the process without this listener.
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates the database the URL names when it does not exist yet (first start of a dev stack). */
export async function ensureDatabase(url: string): Promise<boolean> {
  const name = databaseName(url);
  return withMaintenanceClient(url, async (client) => {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
      return true;
    } catch (error) {
      // Another process created it between the check and the create.
      if ((error as { code?: string }).code === '42P04') return false;
      throw error;
    }
  });
}

export interface ScratchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/**
 * A new, empty database on the server `baseUrl` points at, for one test suite: suites never
 * share state, and `drop()` removes it even while connections are still open.
 */
export async function createScratchDatabase(baseUrl: string, label: string): Promise<ScratchDatabase> {
  const name = `t_${label
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 40)}_${randomBytes(4).toString('hex')}`;
  await withMaintenanceClient(baseUrl, (client) => client.query(`CREATE DATABASE ${quoteIdent(name)}`));
  return {
    name,
    url: withDatabase(baseUrl, name),
    drop: () =>
      withMaintenanceClient(baseUrl, async (client) => {
        await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(name)} WITH (FORCE)`);
      }),
  };
}
