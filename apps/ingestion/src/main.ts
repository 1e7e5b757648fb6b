import path from 'node:path';
import { loadConfigOrExit } from '@pipeline/config';
import { ControlPlaneClient, TenantChangeSubscriber } from '@pipeline/tenancy';
import {
  consumerGroupFor,
  destinationKinds,
  WarehouseWriter,
  warehouseTimeoutsOf,
} from '@pipeline/destinations';
import { createKafka, createProducer, ensureTopics, pipelineTopics, prefixedTopic } from '@pipeline/kafka';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { createLogger, type Logger } from '@pipeline/logger';
import { ensureDatabase } from '@pipeline/postgres';
import { closeRedis, createRedis, type Redis } from '@pipeline/redis';
import { createApp } from './app';
import { HostedAuthenticator } from './auth/hosted-authenticator';
import { StaticAuthenticator } from './auth/static-authenticator';
import { clientAddressResolver } from './collect/client-address';
import { CollectService } from './collect/collect-service';
import { ingestionConfigSchema, type IngestionConfig } from './config';
import { OutboxHealth, StaticHealth } from './health/delivery-health';
import { AuthAttemptLimiter, LocalBackstop, SharedRateLimiter } from './limits/rate-limits';
import { BatchDedupe } from './outbox/batch-dedupe';
import { OutboxPublisher } from './outbox/outbox-publisher';
import { loadSdkFile } from './sdk/sdk-file';
import { staticTenant } from './static/static-tenant';
import { WarehouseStaticDelivery } from './static/warehouse-delivery';

const DEFAULT_SDK_PATH = path.resolve(__dirname, '../../../libs/sdk/dist/sdk.js');

async function connectRedis(
  config: IngestionConfig,
  logger: Logger,
  shutdown: Shutdown,
): Promise<Redis | null> {
  if (!config.REDIS_URL) {
    logger.warn('REDIS_URL is not set: no shared rate limits and no batch dedupe across instances');
    return null;
  }
  const redis = createRedis({ REDIS_URL: config.REDIS_URL }, { logger, keyPrefix: 'ingestion:' });
  // Down at start is not fatal: the limits and dedupe fall back, and ioredis keeps reconnecting.
  await redis
    .connect()
    .catch((error: Error) => logger.warn('redis not reachable at start', { error: error.message }));
  shutdown.add('redis', () => closeRedis(redis));
  return redis;
}

/** The schema guarantees these per mode; narrowing them here keeps the types honest. */
function required(value: string | undefined, name: string): string {
  if (!value) throw new Error(`${name} is required in this auth mode`);
  return value;
}

async function hostedCollect(config: IngestionConfig, logger: Logger, shutdown: Shutdown) {
  const kafka = createKafka(config, { clientId: 'ingestion', logger });
  const topic = prefixedTopic(pipelineTopics.trackingEvents, config.KAFKA_TOPIC_PREFIX);
  await ensureTopics(kafka, [topic], { replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });
  const producer = createProducer(kafka);
  await producer.connect();
  // Runs after the HTTP drain: every request that was acknowledged has had its send awaited.
  shutdown.add('kafka producer', () => producer.disconnect());
  const redis = await connectRedis(config, logger, shutdown);
  let changes: TenantChangeSubscriber | undefined;
  const authenticator = new HostedAuthenticator(
    new ControlPlaneClient(
      required(config.CONTROL_PLANE_URL, 'CONTROL_PLANE_URL'),
      required(config.INTERNAL_SERVICE_TOKEN, 'INTERNAL_SERVICE_TOKEN'),
      logger,
    ),
    {
      validTtlMs: config.WRITE_KEY_CACHE_TTL_SECONDS * 1000,
      invalidTtlMs: config.WRITE_KEY_NEGATIVE_CACHE_TTL_SECONDS * 1000,
      hearsRevocations: () => changes?.live ?? false,
    },
    logger,
  );
  if (config.REDIS_URL) {
    // Revoked keys are refused from the next request on (README, "Revocation and rotation").
    const subscriber = TenantChangeSubscriber.start(
      config.REDIS_URL,
      (event) => authenticator.invalidate(event),
      logger,
    );
    changes = subscriber;
    shutdown.add('tenant changes', () => subscriber.stop());
  }
  const groups = Object.fromEntries(
    destinationKinds.map((kind) => [kind, consumerGroupFor(kind, config.KAFKA_TOPIC_PREFIX)]),
  );
  const health = new OutboxHealth(kafka, topic.topic, groups, {
    lagThreshold: config.DELIVERY_LAG_UNHEALTHY,
  });
  shutdown.add('health admin client', () => health.close());
  const collect = new CollectService({
    authenticator,
    logger,
    hosted: {
      publisher: new OutboxPublisher(producer, { topic: topic.topic }),
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
    },
  });
  return { collect, health };
}

async function staticCollect(config: IngestionConfig, logger: Logger, shutdown: Shutdown) {
  if (await ensureDatabase(config.WAREHOUSE_URL)) logger.info('warehouse database created');
  const writer = new WarehouseWriter(config.WAREHOUSE_URL, { timeouts: warehouseTimeoutsOf(config) });
  shutdown.add('warehouse pool', () => writer.close());
  await writer.ensureSchema(config.WAREHOUSE_SCHEMA);
  const tenant = staticTenant(config.WAREHOUSE_SCHEMA);
  const collect = new CollectService({
    authenticator: new StaticAuthenticator(required(config.WRITE_KEY, 'WRITE_KEY'), tenant),
    logger,
    staticDelivery: new WarehouseStaticDelivery(writer, config.WAREHOUSE_SCHEMA, logger),
  });
  return { collect, health: new StaticHealth() };
}

async function main(): Promise<void> {
  const config = loadConfigOrExit('ingestion', ingestionConfigSchema);
  const logger = createLogger({ service: 'ingestion', level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const shutdown = new Shutdown({ logger, timeoutMs: config.SHUTDOWN_TIMEOUT_MS }).listen();
  const mode = config.MANAGED_AUTH_ENABLED ? 'hosted' : 'static';
  const { collect, health } =
    mode === 'hosted'
      ? await hostedCollect(config, logger, shutdown)
      : await staticCollect(config, logger, shutdown);
  logger.info('auth mode', { mode });

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
  });
  await serveHttp(app, { host: config.HOST, port: config.PORT, logger, shutdown });
}

startService('ingestion', main);
