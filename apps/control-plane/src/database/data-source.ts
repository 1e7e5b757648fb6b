import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AccountEntity } from '../accounts/account.entity';
import { CreateAccounts1795316766691 } from '../database/migrations/1795316766691-create-accounts';

/** Entities and migrations are listed explicitly: no globs that differ between src/ and dist/. */
export const entities = [AccountEntity];
export const migrations = [CreateAccounts1795316766691];

export function createDataSource(options: { url: string; poolMax: number }): DataSource {
  return new DataSource({
    type: 'postgres',
    url: options.url,
    entities,
    migrations,
    migrationsTableName: 'schema_migrations',
    // Schema changes happen only through reviewed migrations.
    synchronize: false,
    migrationsRun: false,
    extra: { max: options.poolMax, connectionTimeoutMillis: 5000 },
  });
}

/** Applies pending migrations, each in its own transaction; returns the names applied. */
export async function migrate(dataSource: DataSource): Promise<string[]> {
  const applied = await dataSource.runMigrations({ transaction: 'each' });
  return applied.map((m) => m.name);
}
