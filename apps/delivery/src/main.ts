#!/usr/bin/env node
// First: the Node version check, then tracing, which instruments modules as they load.
import './node-runtime';
import { tracing } from './tracing';
import { CommanderError } from 'commander';
import { forwarderFor } from '@pipeline/catalog';
import { loadConfigOrExit } from '@pipeline/config';
import {
  consumerGroupFor,
  createDestination,
  DeliveryMetrics,
  deliveryTopicsFor,
  isForwardingKind,
  retryGroupFor,
  runConsumer,
  TenantDirectory,
  warehouseTimeoutsOf,
  type DestinationKind,
} from '@pipeline/destinations';
import { createKafka, ensureTopics, pipelineTopics, prefixedTopic } from '@pipeline/kafka';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger } from '@pipeline/logger';
import { ensureDatabase } from '@pipeline/postgres';
import { closeRedis, createRedis, DebugStreamWriter } from '@pipeline/redis';
import { ControlPlaneClient, TenantChangeSubscriber } from '@pipeline/tenancy';
import { RedisOutcomeRecorder } from './debugger/redis-outcome-recorder';
import { parseDeliveryArgs } from './cli';
import { deliveryConfigSchema, forwardingBaseUrls, forwardingLimitsOf } from './config';
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

  if (kind === 'warehouse' && (await ensureDatabase(config.WAREHOUSE_URL)))
    logger.info('warehouse database created');
  const kafka = createKafka(config, { clientId: service, logger });
  const prefix = config.KAFKA_TOPIC_PREFIX;
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix);
  const { retry, deadLetter } = deliveryTopicsFor(kind, prefix);
  await ensureTopics(kafka, [outbox, retry, deadLetter], {
    replicationFactor: config.KAFKA_REPLICATION_FACTOR,
    logger,
  });
  const groupId = consumerGroupFor(kind, prefix);
  const admin = kafka.admin();
  await admin.connect();
  shutdown.add('kafka admin', () => admin.disconnect());
  const metrics = new DeliveryMetrics({
    admin,
    groups: { [groupId]: outbox.topic, [retryGroupFor(groupId)]: retry.topic },
  });
  let changes: TenantChangeSubscriber | undefined;
  // The log and warehouse consumers never ask the control plane: they hold no token's client.
  const tenants =
    isForwardingKind(kind) && config.CONTROL_PLANE_URL && config.INTERNAL_SERVICE_TOKEN
      ? new TenantDirectory(
          new ControlPlaneClient(config.CONTROL_PLANE_URL, config.INTERNAL_SERVICE_TOKEN, logger),
          { ttlMs: config.TENANT_CACHE_TTL_SECONDS * 1000, hearsChanges: () => changes?.live ?? false },
          logger,
        )
      : undefined;
  if (tenants && config.REDIS_URL) {
    // Rotated credentials and edited integrations reach this consumer as soon as they are saved.
    const subscriber = TenantChangeSubscriber.start(
      config.REDIS_URL,
      (event) => tenants.invalidate(event),
      logger,
    );
    changes = subscriber;
    shutdown.add('tenant changes', () => subscriber.stop());
  }
  let outcomes: RedisOutcomeRecorder | undefined;
  if (config.DEBUGGER_ENABLED && config.REDIS_URL) {
    // The live debugger's outcomes: never awaited, dropped while Redis is away.
    const redis = createRedis({ REDIS_URL: config.REDIS_URL }, { logger });
    redis
      .connect()
      .catch((error: Error) =>
        logger.warn('debugger redis not reachable at start', { error: error.message }),
      );
    shutdown.add('debugger redis', () => closeRedis(redis));
    outcomes = new RedisOutcomeRecorder(
      new DebugStreamWriter(
        redis,
        {
          maxLen: config.DEBUGGER_OUTCOMES_PER_KEY,
          ttlSeconds: config.DEBUGGER_TTL_SECONDS,
          maxPerSecond: config.DEBUGGER_MAX_EVENTS_PER_SECOND,
        },
        logger,
      ),
    );
  }
  const running = await runConsumer({
    kafka,
    ...(outcomes ? { outcomes } : {}),
    destination: createDestination(kind, {
      logger,
      warehouseUrl: config.WAREHOUSE_URL,
      ...(tenants ? { tenants } : {}),
      forwarder: forwarderFor(kind, {
        baseUrls: forwardingBaseUrls(config),
        allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
        timeoutMs: config.VENDOR_TIMEOUT_MS,
        maxSplitRequests: config.DELIVERY_MAX_SPLIT_REQUESTS,
        onResponse: (statusClass) => metrics.vendorResponse(kind, statusClass),
      }),
      forwardingLimits: forwardingLimitsOf(config),
      warehouseTimeouts: warehouseTimeoutsOf(config),
      warehouseRowsPerCopy: config.WAREHOUSE_ROWS_PER_COPY,
      ...(outcomes ? { outcomes } : {}),
    }),
    topics: { source: outbox.topic, retry: retry.topic, deadLetter: deadLetter.topic },
    groupId,
    logger,
    metrics,
    sessionTimeoutMs: config.DELIVERY_SESSION_TIMEOUT_MS,
    partitionsConcurrently: kind === 'warehouse' ? config.WAREHOUSE_PARTITIONS_CONCURRENTLY : 1,
    policy: {
      maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
      baseDelayMs: config.DELIVERY_RETRY_BASE_MS,
      maxDelayMs: config.DELIVERY_RETRY_MAX_MS,
    },
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
    topic: outbox.topic,
    groupId,
    retry: retry.topic,
    deadLetter: deadLetter.topic,
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
