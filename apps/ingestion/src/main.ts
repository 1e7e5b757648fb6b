import { loadConfigOrExit } from '@pipeline/config';
import { createKafka, createProducer, ensureTopics, KafkaHealthProbe, pipelineTopics } from '@pipeline/kafka';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { createApp } from './app';
import { ingestionConfigSchema } from './config';

async function main(): Promise<void> {
  const config = loadConfigOrExit('ingestion', ingestionConfigSchema);
  const logger = createLogger({ service: 'ingestion', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();

  const kafka = createKafka(config, { clientId: 'ingestion', logger });
  await ensureTopics(kafka, [pipelineTopics.trackingEvents], {
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    logger,
  });
  const producer = createProducer(kafka);
  await producer.connect();
  // Runs after the HTTP drain: every request that was acknowledged has had its send awaited.
  shutdown.add('kafka producer', () => producer.disconnect());

  await serveHttp(createApp({ logger, outbox: new KafkaHealthProbe(kafka) }), {
    host: config.HOST,
    port: config.PORT,
    logger,
    shutdown,
  });
}

startService('ingestion', main);
