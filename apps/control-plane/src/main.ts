import { loadConfigOrExit } from '@pipeline/config';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { createApp } from './app';
import { controlPlaneConfigSchema } from './config';
import { createDataSource } from './database/data-source';
import { TaskWorker } from './tasks/task-worker';
import { WarehouseReader } from './tasks/warehouse-reader';

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
  const warehouse = new WarehouseReader(config.WAREHOUSE_URL);
  shutdown.add('warehouse pool', () => warehouse.close());

  // The task worker runs in this process; hooks run in reverse, so it stops before the pools close.
  let worker: TaskWorker | undefined;
  if (config.TASK_WORKER_ENABLED) {
    worker = new TaskWorker({
      dataSource,
      warehouse,
      logger,
      concurrency: config.TASK_WORKER_CONCURRENCY,
      pollIntervalMs: config.TASK_WORKER_POLL_INTERVAL_MS,
      heartbeatIntervalMs: config.TASK_RUN_HEARTBEAT_INTERVAL_MS,
      staleAfterMs: config.TASK_RUN_STALE_AFTER_MS,
      maxAttempts: config.TASK_RUN_MAX_ATTEMPTS,
    });
    worker.start();
    const running = worker;
    shutdown.add('task worker', () => running.stop());
  }

  await serveHttp(
    createApp({
      dataSource,
      logger,
      credentialKeys: config.CREDENTIALS_ENCRYPTION_KEYS,
      internalServiceToken: config.INTERNAL_SERVICE_TOKEN,
      warehouse,
      onTaskRunQueued: () => worker?.wake(),
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
