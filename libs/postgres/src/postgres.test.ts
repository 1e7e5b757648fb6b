import { Client } from 'pg';
import { loadConfig } from '@pipeline/config';
import {
  createScratchDatabase,
  databaseName,
  ensureDatabase,
  postgresConfigSchema,
  withDatabase,
} from './index';

// Runs against the real PostgreSQL server (127.0.0.1:5432 or DATABASE_URL).
const { DATABASE_URL } = loadConfig(postgresConfigSchema, process.env);

async function exists(name: string): Promise<boolean> {
  const client = new Client({ connectionString: withDatabase(DATABASE_URL, 'postgres') });
  await client.connect();
  const result = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
  await client.end();
  return result.rowCount === 1;
}

describe('PostgreSQL (real server)', () => {
  it('connects and answers a query', async () => {
    const client = new Client({ connectionString: withDatabase(DATABASE_URL, 'postgres') });
    await client.connect();
    const { rows } = await client.query<{ version: string }>('SELECT version()');
    await client.end();
    expect(rows[0]?.version).toMatch(/^PostgreSQL \d+/);
  });

  it('gives each suite its own database and drops it even with open connections', async () => {
    const a = await createScratchDatabase(DATABASE_URL, 'Postgres Lib');
    const b = await createScratchDatabase(DATABASE_URL, 'Postgres Lib');
    expect(a.name).not.toBe(b.name);
    expect(a.name).toMatch(/^t_postgres_lib_[0-9a-f]{8}$/);

    const client = new Client({ connectionString: a.url });
    await client.connect();
    await client.query('CREATE TABLE marker (id int)');
    const other = new Client({ connectionString: b.url });
    await other.connect();
    const { rowCount } = await other.query("SELECT 1 FROM pg_tables WHERE tablename = 'marker'");
    await other.end();
    expect(rowCount).toBe(0);

    client.on('error', () => undefined); // its backend is terminated by DROP ... WITH (FORCE)
    await a.drop();
    await b.drop();
    expect(await exists(a.name)).toBe(false);
    expect(await exists(b.name)).toBe(false);
  });

  it('creates a missing database once', async () => {
    const scratch = await createScratchDatabase(DATABASE_URL, 'ensure');
    await scratch.drop();
    expect(await ensureDatabase(scratch.url)).toBe(true);
    expect(await ensureDatabase(scratch.url)).toBe(false);
    expect(await exists(scratch.name)).toBe(true);
    await scratch.drop();
  });

  it('parses and rewrites database names in URLs', () => {
    expect(databaseName('postgres://u:p@h:5432/my%20db?sslmode=disable')).toBe('my db');
    expect(withDatabase('postgres://u:p@h:5432/a?sslmode=disable', 'b')).toBe(
      'postgres://u:p@h:5432/b?sslmode=disable',
    );
    expect(() => databaseName('postgres://h:5432')).toThrow(/names no database/);
  });
});
