#!/usr/bin/env node
import { CommanderError } from 'commander';
import { loadConfigOrExit } from '@pipeline/config';
import {
  consumerGroupFor,
  destinationKinds,
  runConsumer,
  type DestinationKind,
} from '@pipeline/destinations';
import { createKafka, ensureTopics, pipelineTopics } from '@pipeline/kafka';
import { Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { ensureDatabase } from '@pipeline/postgres';
import { parseDeliveryArgs } from './cli';
import { deliveryConfigSchema } from './config';

async function main(kind: DestinationKind): Promise<void> {
  const service = `delivery-${kind}`;
  const config = loadConfigOrExit(service, deliveryConfigSchema);
  const logger = createLogger({ service, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();

  if (kind === 'warehouse' && (await ensureDatabase(config.WAREHOUSE_URL)))
    logger.info('warehouse database created');
  const kafka = createKafka(config, { clientId: service, logger });
  const topic = pipelineTopics.trackingEvents;
  await ensureTopics(kafka, [topic], { replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });
  const groupId = consumerGroupFor(kind);
  const running = await runConsumer({
    kafka,
    destination: destinationKinds[kind]({ logger, warehouseUrl: config.WAREHOUSE_URL }),
    topic: topic.topic,
    groupId,
    logger,
    // A consumer that kafkajs will not restart must not linger as a zombie: exit, and let
    // the orchestrator start a fresh one from the last committed offset.
    onFatal: () => void shutdown.run('consumer crashed', 1),
  });
  shutdown.add('kafka consumer', () => running.stop());
  logger.info('delivering', { destination: kind, topic: topic.topic, groupId });
}

let kind: DestinationKind;
try {
  kind = parseDeliveryArgs(process.argv.slice(2)).destination;
} catch (error) {
  // commander has printed the usage problem already.
  process.exit(error instanceof CommanderError ? error.exitCode : 2);
}
startService(`delivery-${kind}`, () => main(kind));
