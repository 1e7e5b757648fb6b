import { forwarderFor } from '@pipeline/catalog';
import {
  consumerGroupFor,
  controlPlaneWarehouseCalls,
  createDestination,
  DeliveryMetrics,
  deliveryTopicsFor,
  FunctionStep,
  isForwardingKind,
  ResolvingWarehouseDirectory,
  retryGroupFor,
  TenantDirectory,
  warehouseConnectionFromUrl,
  warehousePoolLimitsOf,
  warehouseTimeoutsOf,
  type DestinationDependencies,
  type ConsumerRunnerOptions,
  type DestinationKind,
} from '@pipeline/destinations';
import { createKafka, ensureTopics, pipelineTopics, prefixedTopic } from '@pipeline/kafka';
import type { ShutdownStep } from '@pipeline/lifecycle';
import type { Logger } from '@pipeline/logger';
import { ensureDatabase } from '@pipeline/postgres';
import { closeRedis, createRedis, DebugStreamWriter, redisConnectionOf } from '@pipeline/redis';
import {
  ControlPlaneClient,
  REGULATED_SUBJECTS_TIMEOUT_MS,
  RegulatedSubjectsCache,
  TenantChangeSubscriber,
} from '@pipeline/tenancy';
import { createIsolatedVmRuntime } from '@pipeline/functions';
import { RedisOutcomeRecorder } from './debugger/redis-outcome-recorder';
import { forwardingBaseUrls, forwardingLimitsOf, functionSettingsOf, type DeliveryConfig } from './config';

/** One delivery consumer's object graph, built once from its validated config. */
export interface Delivery {
  /** What runConsumer starts, all but onFatal: what a crash does is the process's call (main). */
  consumer: Omit<ConsumerRunnerOptions, 'onFatal'>;
  metrics: DeliveryMetrics;
  /** Every resource the graph opened, in the order to register them with `Shutdown`. */
  shutdownSteps: ShutdownStep[];
}

/** `service` is the process's name (delivery-<kind>): the Kafka client id. */
export async function composeDelivery(
  kind: DestinationKind,
  config: DeliveryConfig,
  logger: Logger,
  service: string,
): Promise<Delivery> {
  const steps: ShutdownStep[] = [];
  // Only the warehouse kind reads WAREHOUSE_URL (the platform warehouse's password): the others
  // start without it, and the manifests mount it nowhere else. A PostgreSQL database is created
  // when missing; a ClickHouse engine creates each account's database.
  if (
    kind === 'warehouse' &&
    warehouseConnectionFromUrl(config.WAREHOUSE_URL).engine === 'postgres' &&
    (await ensureDatabase(config.WAREHOUSE_URL))
  )
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
  steps.push({ name: 'kafka admin', run: () => admin.disconnect() });
  const metrics = new DeliveryMetrics({
    admin,
    groups: { [groupId]: outbox.topic, [retryGroupFor(groupId)]: retry.topic },
  });
  let changes: TenantChangeSubscriber | undefined;
  // The log consumer never asks the control plane, nor does the warehouse one without it
  // (every account on WAREHOUSE_URL): they hold no token's client.
  const controlPlaneAt = (timeoutMs?: number) =>
    kind !== 'log' && config.CONTROL_PLANE_URL && config.INTERNAL_SERVICE_TOKEN
      ? new ControlPlaneClient(config.CONTROL_PLANE_URL, config.INTERNAL_SERVICE_TOKEN, logger, timeoutMs)
      : undefined;
  const controlPlane = controlPlaneAt();
  const tenants =
    isForwardingKind(kind) && controlPlane
      ? new TenantDirectory(
          controlPlane,
          { ttlMs: config.TENANT_CACHE_TTL_SECONDS * 1000, hearsChanges: () => changes?.live ?? false },
          logger,
        )
      : undefined;
  const warehouse: WarehouseRouting =
    kind === 'warehouse' && controlPlane
      ? controlPlaneWarehouses(controlPlane, config, logger, () => changes?.live ?? false)
      : {};
  // Every consumer that asks the control plane takes regulated subjects' events out of each
  // batch (docs/delivery-and-destinations.md, "Regulated subjects"); the log consumer writes no
  // identifier and holds no token.
  const regulationsClient = controlPlaneAt(REGULATED_SUBJECTS_TIMEOUT_MS);
  const regulations = regulationsClient
    ? new RegulatedSubjectsCache(
        regulationsClient,
        { ttlMs: config.TENANT_CACHE_TTL_SECONDS * 1000, hearsChanges: () => changes?.live ?? false },
        logger,
      )
    : undefined;
  const caches = [tenants, warehouse.warehouseDirectory, regulations].filter((cache) => cache !== undefined);
  const redisConnection = redisConnectionOf(config);
  if (caches.length > 0 && redisConnection) {
    // Rotated credentials, edited integrations, moved placements and regulations reach this
    // consumer as soon as they are saved.
    const subscriber = TenantChangeSubscriber.start(
      redisConnection,
      (event) => {
        for (const cache of caches) cache.invalidate(event);
      },
      logger,
    );
    changes = subscriber;
    steps.push({ name: 'tenant changes', run: () => subscriber.stop() });
  }
  let outcomes: RedisOutcomeRecorder | undefined;
  if (config.DEBUGGER_ENABLED && redisConnection) {
    // The live debugger's outcomes: never awaited, dropped while Redis is away.
    const redis = createRedis(redisConnection, { logger });
    redis
      .connect()
      .catch((error: Error) =>
        logger.warn('debugger redis not reachable at start', { error: error.message }),
      );
    steps.push({ name: 'debugger redis', run: () => closeRedis(redis) });
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
  // Tenant functions run in sandbox processes forked on first use: a consumer whose tenants
  // bind none never starts one. The log consumer delivers nothing a function could change.
  let functions: FunctionStep | undefined;
  if (kind !== 'log') {
    const runtime = createIsolatedVmRuntime({
      processes: config.FUNCTIONS_SANDBOX_PROCESSES,
      ...(config.FUNCTIONS_SANDBOX_UID > 0
        ? { uid: config.FUNCTIONS_SANDBOX_UID, gid: config.FUNCTIONS_SANDBOX_UID }
        : {}),
    });
    steps.push({ name: 'function sandboxes', run: () => runtime.close() });
    functions = new FunctionStep(runtime, logger, functionSettingsOf(config));
    metrics.watchFunctions(functions.counters);
  }
  const consumer: Omit<ConsumerRunnerOptions, 'onFatal'> = {
    kafka,
    ...(outcomes ? { outcomes } : {}),
    ...(regulations ? { regulations } : {}),
    destination: createDestination(kind, {
      logger,
      ...(kind === 'warehouse' ? { warehouseUrl: config.WAREHOUSE_URL } : {}),
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
      warehousePoolLimits: warehousePoolLimitsOf(config),
      warehouseRowsPerCopy: config.WAREHOUSE_ROWS_PER_COPY,
      warehouseCustomerBudgetMs: config.WAREHOUSE_CUSTOMER_BATCH_BUDGET_MS,
      egressAllowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
      ...(config.WAREHOUSE_CLICKHOUSE_CLUSTER
        ? { clickhouseCluster: config.WAREHOUSE_CLICKHOUSE_CLUSTER }
        : {}),
      ...warehouse,
      ...(outcomes ? { outcomes } : {}),
      ...(functions ? { functions } : {}),
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
  };
  return { consumer, metrics, shutdownSteps: steps };
}

type WarehouseRouting = Pick<DestinationDependencies, 'warehouseDirectory' | 'reportWarehouseStatus'>;

/**
 * The warehouse consumer with a control plane: each account's placement asked of it (cached
 * for TENANT_CACHE_TTL_SECONDS, 10 s at most while tenant changes are not heard, dropped on a
 * change) and each warehouse's status told.
 * Without one, createDestination puts every account on WAREHOUSE_URL.
 */
function controlPlaneWarehouses(
  client: ControlPlaneClient,
  config: DeliveryConfig,
  logger: Logger,
  hearsChanges: () => boolean,
): WarehouseRouting {
  const calls = controlPlaneWarehouseCalls(client);
  return {
    warehouseDirectory: new ResolvingWarehouseDirectory(
      calls.resolve,
      { ttlMs: config.TENANT_CACHE_TTL_SECONDS * 1000, hearsChanges },
      logger,
    ),
    reportWarehouseStatus: calls.reportStatus,
  };
}
