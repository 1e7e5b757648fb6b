import { loadConfigOrExit } from '@pipeline/config';
import { startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { ensureDatabase } from '@pipeline/postgres';
import { migrateConfigSchema } from '../config';
import { createDataSource } from '../data-model';
import { migrate, MIGRATOR_POOL_SIZE } from './data-source';

/** `migrate`: creates the database when missing and applies pending migrations (the pre-deploy Job). */
async function main(): Promise<void> {
  const config = loadConfigOrExit('migrate', migrateConfigSchema);
  const logger = createLogger({ service: 'migrate', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  if (await ensureDatabase(config.DATABASE_URL)) logger.info('database created');
  const dataSource = createDataSource({ url: config.DATABASE_URL, poolMax: MIGRATOR_POOL_SIZE });
  await dataSource.initialize();
  try {
    const applied = await migrate(dataSource);
    logger.info('migrations applied', { applied, count: applied.length });
  } finally {
    await dataSource.destroy();
  }
}

startService('migrate', main);
