// First: the Node version check, then tracing, which instruments modules as they load.
import './node-runtime';
import { tracing } from './tracing';
import { loadConfigOrExit } from '@pipeline/config';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { composeIngestion } from './composition';
import { ingestionConfigSchema } from './config';

async function main(): Promise<void> {
  const config = loadConfigOrExit('ingestion', ingestionConfigSchema);
  const logger = createLogger({ service: 'ingestion', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();
  // Registered first, so it runs last: the spans of the other steps are exported too.
  shutdown.add('tracing', () => tracing.shutdown());
  const ingestion = await composeIngestion(config, logger);
  shutdown.addSteps(ingestion.shutdownSteps);
  logger.info('auth mode', { mode: ingestion.mode });

  await serveHttp(ingestion.metricsApp, {
    host: config.HOST,
    port: config.METRICS_PORT,
    logger,
    shutdown,
  });
  await serveHttp(ingestion.app, { host: config.HOST, port: config.PORT, logger, shutdown });
}

startService('ingestion', main);
