import type { DataSource } from 'typeorm';
import { createScratchDatabase, DEFAULT_DATABASE_URL } from '@pipeline/postgres';
import { createDataSource } from './data-model';
import { migrate } from './database/data-source';

export interface MigratedScratchDatabase {
  dataSource: DataSource;
  url: string;
  /** Closes the pool and drops the database. */
  drop(): Promise<void>;
}

/**
 * A test suite's own database on the real server: created, migrated with the same migrations
 * production runs, and dropped afterwards. Suites never share state.
 */
export async function createMigratedScratchDatabase(label: string): Promise<MigratedScratchDatabase> {
  const scratch = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, label);
  const dataSource = createDataSource({ url: scratch.url, poolMax: 4 });
  await dataSource.initialize();
  await migrate(dataSource);
  return {
    dataSource,
    url: scratch.url,
    drop: async () => {
      if (dataSource.isInitialized) await dataSource.destroy();
      await scratch.drop();
    },
  };
}
