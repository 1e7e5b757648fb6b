#!/usr/bin/env node
// First: the Node version check, then tracing, which instruments modules as they load.
import './node-runtime';
import { tracing } from './tracing';
import { CommanderError } from 'commander';
import { loadConfigOrExit } from '@pipeline/config';
import { isForwardingKind, runConsumer, type DestinationKind } from '@pipeline/destinations';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { parseDeliveryArgs } from './cli';
import { composeDelivery } from './composition';
import { deliveryConfigSchema } from './config';
import { deliveryHttp } from './http/delivery-http';

async function main(kind: DestinationKind): Promise<void> {
  const service = `delivery-${kind}`;
  const config = loadConfigOrExit(service, deliveryConfigSchema);
  const logger = createLogger({ service, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  if (isForwardingKind(kind) && (!config.CONTROL_PLANE_URL || !config.INTERNAL_SERVICE_TOKEN)) {
    process.stderr.write(
      `${service}: CONTROL_PLANE_URL and INTERNAL_SERVICE_TOKEN are required to forward\n`,
    );
    process.exit(78);
  }
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();
  // Registered first, so it runs last: the spans of the other steps are exported too.
  shutdown.add('tracing', () => tracing.shutdown());

  const delivery = await composeDelivery(kind, config, logger, service);
  shutdown.addSteps(delivery.shutdownSteps);
  const { consumer, metrics } = delivery;
  const running = await runConsumer({
    ...consumer,
    // A consumer that can no longer deliver must not linger as a zombie: exit non-zero, and
    // let the orchestrator start a fresh one from the last committed offset.
    onFatal: () => void shutdown.run('consumer crashed', 1),
  });
  shutdown.add('kafka consumers', () => running.stop());
  await serveHttp(
    deliveryHttp(metrics, {
      destination: kind,
      running: () => running.running(),
      unavailableSince: () => running.unavailableSince(),
    }),
    {
      host: config.DELIVERY_HTTP_HOST,
      port: config.DELIVERY_HTTP_PORT,
      logger,
      shutdown,
    },
  );
  logger.info('delivering', {
    destination: kind,
    topic: consumer.topics.source,
    groupId: consumer.groupId,
    retry: consumer.topics.retry,
    deadLetter: consumer.topics.deadLetter,
  });
}

let kind: DestinationKind;
try {
  kind = parseDeliveryArgs(process.argv.slice(2)).destination;
} catch (error) {
  // commander has printed the usage problem already.
  process.exit(error instanceof CommanderError ? error.exitCode : 2);
}
startService(`delivery-${kind}`, () => main(kind));
