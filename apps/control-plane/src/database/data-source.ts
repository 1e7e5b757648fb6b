import 'reflect-metadata';
import { DataSource } from 'typeorm';
import { AccountEntity } from '../accounts/account.entity';
import { AppEntity } from '../apps/app.entity';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { IntegrationEntity } from '../integrations/integration.entity';
import { JobEntity } from '../jobs/job.entity';
import { SourceEntity } from '../sources/source.entity';
import { TaskEntity } from '../tasks/task.entity';
import { TaskRunEntity } from '../tasks/task-run.entity';
import { WriteKeyEntity } from '../write-keys/write-key.entity';
import { CreateAccounts1795316766691 } from './migrations/1795316766691-create-accounts';
import { WriteKeyRateLimits1795320137749 } from './migrations/1795320137749-write-key-rate-limits';
import { CreateManagementResources1795317946270 } from './migrations/1795317946270-create-management-resources';
import { CreateTasks1795400000000 } from './migrations/1795400000000-create-tasks';
import { SyncEngine1795450000000 } from './migrations/1795450000000-sync-engine';
import { IntegrationRuns1795460000000 } from './migrations/1795460000000-integration-runs';
import { CreateUsage1795500000000 } from './migrations/1795500000000-create-usage';
import { UsageMeteringState1795510000000 } from './migrations/1795510000000-usage-metering-state';
import { FairQueue1795610000000 } from './migrations/1795610000000-fair-queue';

/** Entities and migrations are listed explicitly: no globs that differ between src/ and dist/. */
export const entities = [
  AccountEntity,
  ApiKeyEntity,
  WriteKeyEntity,
  AppEntity,
  SourceEntity,
  IntegrationEntity,
  JobEntity,
  TaskEntity,
  TaskRunEntity,
];
export const migrations = [
  CreateAccounts1795316766691,
  CreateManagementResources1795317946270,
  WriteKeyRateLimits1795320137749,
  CreateTasks1795400000000,
  SyncEngine1795450000000,
  IntegrationRuns1795460000000,
  CreateUsage1795500000000,
  UsageMeteringState1795510000000,
  FairQueue1795610000000,
];

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
