import 'reflect-metadata';
import { DataSource, type DataSourceOptions } from 'typeorm';

/** The entities and migrations a data source maps: the whole model, listed in src/data-model.ts. */
export type DataModel = Required<Pick<DataSourceOptions, 'entities' | 'migrations'>>;

export function dataSourceFor(model: DataModel, options: { url: string; poolMax: number }): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    entities: model.entities,
    migrations: model.migrations,
    migrationsTableName: 'schema_migrations',
    // Schema changes happen only through reviewed migrations.
    synchronize: false,
    migrationsRun: false,
    extra: { max: options.poolMax, connectionTimeoutMillis: 5000 },
  });
}

/** The lock holds one connection for the whole run and the migrations use another. */
export const MIGRATOR_POOL_SIZE = 2;

// Any constant works; it only has to be the same for every migrator of this database.
const MIGRATION_LOCK = 7_224_001;

/**
 * Applies pending migrations, each in its own transaction; returns the names applied.
 * An advisory lock, held on its own connection for the whole run, serializes migrators
 * (a retried deploy Job, two dev stacks): the second waits, then finds nothing to do.
 */
export async function migrate(dataSource: DataSource): Promise<string[]> {
  const lock = dataSource.createQueryRunner();
  await lock.connect();
  try {
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return applied.map((m) => m.name);
  } finally {
    await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await lock.release();
  }
}
