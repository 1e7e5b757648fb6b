// First: the Node version check, then tracing, which instruments modules as they load.
import './node-runtime';
import { tracing } from './tracing';
import { loadConfigOrExit } from '@pipeline/config';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { composeControlPlane } from './composition';
import { controlPlaneConfigSchema } from './config';

async function main(): Promise<void> {
  const config = loadConfigOrExit('control-plane', controlPlaneConfigSchema);
  const logger = createLogger({
    service: 'control-plane',
    level: config.LOG_LEVEL,
    format: config.LOG_FORMAT,
  });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();
  // Registered first, so it runs last: the spans of the other steps are exported too.
  shutdown.add('tracing', () => tracing.shutdown());

  const controlPlane = await composeControlPlane(config, logger);
  shutdown.addSteps(controlPlane.shutdownSteps);
  controlPlane.start();
  // Registered last, so the servers stop taking requests before anything else closes. The
  // operator API gets a port of its own, which no Ingress routes (docs/operations.md); opened
  // first, so a public listener that answers means the operator one does too.
  if (controlPlane.operatorApp)
    await serveHttp(controlPlane.operatorApp, {
      host: config.HOST,
      port: config.OPERATOR_PORT,
      logger: logger.child({ listener: 'operator' }),
      shutdown,
    });
  await serveHttp(controlPlane.app, { host: config.HOST, port: config.PORT, logger, shutdown });
}

startService('control-plane', main);
