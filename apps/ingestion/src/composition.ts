import path from 'node:path';
import type { RequestListener } from 'node:http';
import { deliveryKinds } from '@pipeline/catalog';
import {
  clientAddressResolver,
  ControlPlaneClient,
  INGESTION_KEY_PREFIX,
  REGULATED_SUBJECTS_TIMEOUT_MS,
  RegulatedSubjectsCache,
  TenantChangeSubscriber,
  TrackingPlanCache,
} from '@pipeline/tenancy';
import { consumerGroupFor, WarehouseWriter, warehouseTimeoutsOf } from '@pipeline/destinations';
import { createKafka, createProducer, ensureTopics, pipelineTopics, prefixedTopic } from '@pipeline/kafka';
import { sharedCheck, type ShutdownStep } from '@pipeline/lifecycle';
import type { Logger } from '@pipeline/logger';
import { ensureDatabase } from '@pipeline/postgres';
import {
  closeRedis,
  createRedis,
  DebugStreamWriter,
  redisConnectionOf,
  ViolationLedger,
  type RedisClient,
} from '@pipeline/redis';
import { DebugRecorder } from './debugger/debug-recorder';
import { createApp } from './app';
import { HostedAuthenticator } from './auth/hosted-authenticator';
import { StaticAuthenticator } from './auth/static-authenticator';
import { CollectService } from './collect/collect-service';
import { PlanDoor } from './collect/plan-door';
import { RegulationDoor } from './collect/regulation-door';
import type { IngestionConfig } from './config';
import { OutboxHealth, StaticHealth } from './health/delivery-health';
import { KafkaReadiness } from './health/kafka-readiness';
import { IngestionMetrics, metricsHttp } from './metrics/ingestion-metrics';
import { AuthAttemptLimiter, LocalBackstop, SharedRateLimiter } from './limits/rate-limits';
import { SharedStoreBatch } from './limits/shared-store-batch';
import { BatchDedupe } from './outbox/batch-dedupe';
import { OutboxPublisher } from './outbox/outbox-publisher';
import { loadSdkFile } from './sdk/sdk-file';
import { staticTenant } from './static/static-tenant';
import { WarehouseStaticDelivery } from './static/warehouse-delivery';

const DEFAULT_SDK_PATH = path.resolve(__dirname, '../../../libs/sdk/dist/sdk.js');

async function connectRedis(
  config: IngestionConfig,
  logger: Logger,
  steps: ShutdownStep[],
): Promise<RedisClient | null> {
  const connection = redisConnectionOf(config);
  if (!connection) {
    logger.warn(
      'Neither REDIS_URL nor REDIS_CLUSTER_NODES is set: no shared rate limits and no batch dedupe across instances',
    );
    return null;
  }
  const redis = createRedis(connection, { logger, keyPrefix: INGESTION_KEY_PREFIX });
  SharedStoreBatch.for(redis).windowMs = config.REDIS_BATCH_WINDOW_MS;
  // Down at start is not fatal: the limits and dedupe fall back, and ioredis keeps reconnecting.
  await redis
    .connect()
    .catch((error: Error) => logger.warn('redis not reachable at start', { error: error.message }));
  steps.push({
    name: 'redis',
    // Runs once requests are answered: their dedupe marks may still be queued.
    run: async () => {
      await SharedStoreBatch.for(redis).drain();
      await closeRedis(redis);
    },
  });
  return redis;
}

/**
 * A connection without the service's key prefix, for the keys the control plane and the
 * consumers read and write too (the debugger's streams, the violation counts). Null without
 * REDIS_URL. Down at start is not fatal: ioredis keeps reconnecting and writers drop and count.
 */
function sharedKeysRedis(config: IngestionConfig, logger: Logger, steps: ShutdownStep[]): RedisClient | null {
  const connection = redisConnectionOf(config);
  if (!connection) return null;
  const redis = createRedis(connection, { logger });
  redis
    .connect()
    .catch((error: Error) =>
      logger.warn('shared keys redis not reachable at start', { error: error.message }),
    );
  steps.push({ name: 'shared keys redis', run: () => closeRedis(redis) });
  return redis;
}

/** The live debugger's recorder. Undefined when disabled or without REDIS_URL: nothing is recorded and /collect does not notice. */
function debugRecorder(
  config: IngestionConfig,
  redis: RedisClient | null,
  logger: Logger,
  metrics: IngestionMetrics,
): DebugRecorder | undefined {
  if (!config.DEBUGGER_ENABLED || !redis) return undefined;
  const writer = new DebugStreamWriter(
    redis,
    {
      maxLen: config.DEBUGGER_EVENTS_PER_KEY,
      ttlSeconds: config.DEBUGGER_TTL_SECONDS,
      maxPerSecond: config.DEBUGGER_MAX_EVENTS_PER_SECOND,
    },
    logger,
  );
  metrics.watchDebugger(() => writer.stats);
  return new DebugRecorder(writer);
}

/** The schema guarantees these per mode; narrowing them here keeps the types honest. */
function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is required in this auth mode`);
  return value;
}

async function hostedCollect(
  config: IngestionConfig,
  logger: Logger,
  steps: ShutdownStep[],
  metrics: IngestionMetrics,
) {
  const kafka = createKafka(config, { clientId: 'ingestion', logger });
  const topic = prefixedTopic(pipelineTopics.trackingEvents, config.KAFKA_TOPIC_PREFIX);
  await ensureTopics(kafka, [topic], { replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });
  const producer = createProducer(kafka);
  await producer.connect();
  // Runs after the HTTP drain: every request that was acknowledged has had its send awaited.
  steps.push({ name: 'kafka producer', run: () => producer.disconnect() });
  const redis = await connectRedis(config, logger, steps);
  const sharedKeys = sharedKeysRedis(config, logger, steps);
  const ledger = new ViolationLedger(sharedKeys, logger);
  metrics.watchViolationCounts(() => ledger.stats);
  let changes: TenantChangeSubscriber | undefined;
  const controlPlaneAt = (timeoutMs?: number) =>
    new ControlPlaneClient(
      required(config.CONTROL_PLANE_URL, 'CONTROL_PLANE_URL'),
      required(config.INTERNAL_SERVICE_TOKEN, 'INTERNAL_SERVICE_TOKEN'),
      logger,
      timeoutMs,
    );
  const authenticator = new HostedAuthenticator(
    controlPlaneAt(),
    {
      validTtlMs: config.WRITE_KEY_CACHE_TTL_SECONDS * 1000,
      invalidTtlMs: config.WRITE_KEY_NEGATIVE_CACHE_TTL_SECONDS * 1000,
      hearsRevocations: () => changes?.live ?? false,
      onCacheResult: metrics.writeKeyCache,
    },
    logger,
  );
  // Asked as often as write keys are, and 10 s at most while changes are not heard
  // (docs/tracking-api.md, "Suppressed subjects").
  const regulations = new RegulatedSubjectsCache(
    controlPlaneAt(REGULATED_SUBJECTS_TIMEOUT_MS),
    { ttlMs: config.WRITE_KEY_CACHE_TTL_SECONDS * 1000, hearsChanges: () => changes?.live ?? false },
    logger,
  );
  const changesConnection = redisConnectionOf(config);
  if (changesConnection) {
    // Revoked keys are refused from the next request on (docs/tracking-api.md, "Revoked write
    // keys"), and a regulation's subjects dropped from then on.
    const subscriber = TenantChangeSubscriber.start(
      changesConnection,
      (event) => {
        authenticator.invalidate(event);
        regulations.invalidate(event);
      },
      logger,
    );
    changes = subscriber;
    steps.push({ name: 'tenant changes', run: () => subscriber.stop() });
  }
  const groups = Object.fromEntries(
    deliveryKinds.map((kind) => [kind, consumerGroupFor(kind, config.KAFKA_TOPIC_PREFIX)]),
  );
  const health = new OutboxHealth(kafka, topic.topic, groups, {
    lagThreshold: config.DELIVERY_LAG_UNHEALTHY,
  });
  steps.push({ name: 'health admin client', run: () => health.close() });
  const kafkaReadiness = new KafkaReadiness(kafka, topic.topic);
  steps.push({ name: 'readiness admin client', run: () => kafkaReadiness.reset() });
  const publisher = new OutboxPublisher(producer, {
    topic: topic.topic,
    compression: config.OUTBOX_COMPRESSION,
  });
  metrics.watchOutbox(() => publisher.pending);
  const collect = new CollectService({
    authenticator,
    logger,
    metrics,
    recorder: debugRecorder(config, sharedKeys, logger, metrics),
    hosted: {
      publisher,
      dedupe: new BatchDedupe(redis, logger),
      backstop: new LocalBackstop(config.RATE_LIMIT_LOCAL_BACKSTOP_EPS),
      shared: new SharedRateLimiter(
        redis,
        {
          eventsPerSecond: config.RATE_LIMIT_EVENTS_PER_SECOND,
          eventsPerDay: config.RATE_LIMIT_EVENTS_PER_DAY,
        },
        logger,
      ),
      authAttempts: new AuthAttemptLimiter(redis, config.AUTH_RESOLUTION_ATTEMPTS_PER_MINUTE),
      regulations: new RegulationDoor(regulations, logger),
      // Versions never change: nothing to drop on a tenant change. A key moving to another
      // version is its write-key record changing, dropped on the account's tenant_changed.
      plans: new PlanDoor(
        new TrackingPlanCache(controlPlaneAt(), logger, { onCompiled: metrics.planCompiled }),
        metrics,
        logger,
        ledger,
      ),
    },
  });
  return { collect, health, readiness: { kafka: sharedCheck(kafkaReadiness.check) } };
}

async function staticCollect(
  config: IngestionConfig,
  logger: Logger,
  steps: ShutdownStep[],
  metrics: IngestionMetrics,
) {
  if (await ensureDatabase(config.WAREHOUSE_URL)) logger.info('warehouse database created');
  const writer = new WarehouseWriter(config.WAREHOUSE_URL, { timeouts: warehouseTimeoutsOf(config) });
  steps.push({ name: 'warehouse pool', run: () => writer.close() });
  await writer.ensureSchema(config.WAREHOUSE_SCHEMA);
  const tenant = staticTenant(config.WAREHOUSE_SCHEMA);
  const collect = new CollectService({
    authenticator: new StaticAuthenticator(required(config.WRITE_KEY, 'WRITE_KEY'), tenant),
    logger,
    metrics,
    recorder: config.DEBUGGER_ENABLED
      ? debugRecorder(config, sharedKeysRedis(config, logger, steps), logger, metrics)
      : undefined,
    staticDelivery: new WarehouseStaticDelivery(writer, config.WAREHOUSE_SCHEMA, logger),
  });
  return { collect, health: new StaticHealth(), readiness: {} };
}

/** The ingestion process's object graph, built once from its validated config. */
export interface Ingestion {
  mode: 'hosted' | 'static';
  /** The tracking API (PORT). */
  app: RequestListener;
  /** Prometheus metrics and the delivery health (METRICS_PORT). */
  metricsApp: RequestListener;
  /** Every resource the graph opened, in the order to register them with `Shutdown`. */
  shutdownSteps: ShutdownStep[];
}

export async function composeIngestion(config: IngestionConfig, logger: Logger): Promise<Ingestion> {
  const steps: ShutdownStep[] = [];
  const mode = config.MANAGED_AUTH_ENABLED ? 'hosted' : 'static';
  const metrics = new IngestionMetrics({ defaultMetrics: true });
  const { collect, health, readiness } =
    mode === 'hosted'
      ? await hostedCollect(config, logger, steps, metrics)
      : await staticCollect(config, logger, steps, metrics);
  const app = createApp({
    logger,
    collect,
    health,
    sdk: loadSdkFile(config.SDK_JS_PATH ?? DEFAULT_SDK_PATH, logger),
    simulate: {
      demoMode: config.DEMO_MODE,
      adminSetupEnabled: config.ADMIN_SETUP_ENABLED,
      adminToken: config.ADMIN_SETUP_TOKEN,
    },
    clientAddress: clientAddressResolver(config.TRUSTED_PROXIES),
    readiness,
    ...(config.PUBLIC_TRACKING_URL ? { publicTrackingUrl: config.PUBLIC_TRACKING_URL } : {}),
  });
  return { mode, app, metricsApp: metricsHttp(metrics, health), shutdownSteps: steps };
}
