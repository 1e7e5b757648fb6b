import { loadConfigOrExit } from '@pipeline/config';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { createApp } from './app';
import { controlPlaneConfigSchema } from './config';
import { createDataSource } from './database/data-source';

async function main(): Promise<void> {
  const config = loadConfigOrExit('control-plane', controlPlaneConfigSchema);
  const logger = createLogger({
    service: 'control-plane',
    level: config.LOG_LEVEL,
    format: config.LOG_FORMAT,
  });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();

  const dataSource = createDataSource({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX });
  await dataSource.initialize();
  shutdown.add('database pool', () => dataSource.destroy());

  await serveHttp(
    createApp({
      dataSource,
      logger,
      credentialKeys: config.CREDENTIALS_ENCRYPTION_KEYS,
      internalServiceToken: config.INTERNAL_SERVICE_TOKEN,
    }),
    {
      host: config.HOST,
      port: config.PORT,
      logger,
      shutdown,
    },
  );
}

startService('control-plane', main);
