#!/usr/bin/env node
import { CommanderError } from 'commander';
import { loadConfigOrExit } from '@pipeline/config';
import { consumerGroupFor, destinationKinds, runConsumer } from '@pipeline/destinations';
import { createKafka, ensureTopics, pipelineTopics } from '@pipeline/kafka';
import { Shutdown } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { parseDeliveryArgs } from './cli';
import { deliveryConfigSchema } from './config';

async function main(): Promise<void> {
  const { destination: kind } = parseDeliveryArgs(process.argv.slice(2));
  const service = `delivery-${kind}`;
  const config = loadConfigOrExit(service, deliveryConfigSchema);
  const logger = createLogger({ service, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();

  const kafka = createKafka(config, { clientId: service, logger });
  const topic = pipelineTopics.trackingEvents;
  await ensureTopics(kafka, [topic], { replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });
  const groupId = consumerGroupFor(kind);
  const running = await runConsumer({
    kafka,
    destination: destinationKinds[kind]({ logger }),
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

main().catch((error: unknown) => {
  if (error instanceof CommanderError) process.exit(error.exitCode);
  process.stderr.write(
    `delivery: failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
