import { createScratchDatabase, DEFAULT_DATABASE_URL } from '@pipeline/postgres';
import { createDataSource, migrations } from '../data-model';
import { migrate, MIGRATOR_POOL_SIZE } from './data-source';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';

describe('migrations (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;

  beforeAll(async () => {
    db = await createMigratedScratchDatabase('migrations');
  });
  afterAll(() => db.drop());

  it('records every migration once and applies nothing on a second run', async () => {
    const rows: { name: string }[] = await db.dataSource.query(
      'SELECT name FROM schema_migrations ORDER BY id',
    );
    expect(rows.map((r) => r.name)).toEqual(migrations.map((m) => m.name));
    expect(await migrate(db.dataSource)).toEqual([]);
  });

  it('creates the accounts table with its defaults and checks', async () => {
    const [account] = await db.dataSource.query(
      "INSERT INTO accounts (name) VALUES ('Acme') RETURNING id, features, created_at",
    );
    expect(account).toMatchObject({ id: expect.stringMatching(/^[0-9a-f-]{36}$/), features: [] });
    await expect(db.dataSource.query("INSERT INTO accounts (name) VALUES ('')")).rejects.toThrow(
      /check constraint/,
    );
  });

  it('reverts cleanly', async () => {
    for (let i = 0; i < migrations.length; i += 1)
      await db.dataSource.undoLastMigration({ transaction: 'each' });
    const [{ exists }] = await db.dataSource.query(
      "SELECT to_regclass('public.accounts') IS NOT NULL AS exists",
    );
    expect(exists).toBe(false);
    expect(await migrate(db.dataSource)).toHaveLength(migrations.length);
  });
});

describe('concurrent migrators (real PostgreSQL)', () => {
  it('serializes them: every migration is applied exactly once', async () => {
    const scratch = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'migrate race',
    );
    const sources = [1, 2, 3].map(() => createDataSource({ url: scratch.url, poolMax: MIGRATOR_POOL_SIZE }));
    try {
      await Promise.all(sources.map((source) => source.initialize()));
      const results = await Promise.all(sources.map((source) => migrate(source)));
      expect(results.flat()).toEqual(migrations.map((m) => m.name));
      const rows: { name: string }[] = await sources[0]!.query('SELECT name FROM schema_migrations');
      expect(rows).toHaveLength(migrations.length);
    } finally {
      await Promise.all(sources.map((source) => (source.isInitialized ? source.destroy() : undefined)));
      await scratch.drop();
    }
  });
});
