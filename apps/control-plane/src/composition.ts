import type { Express } from 'express';
import type { DataSource } from 'typeorm';
import { deletionClientFor, deliveryKinds, forwardingAppTypes } from '@pipeline/catalog';
import { vendorBaseUrlsOf } from '@pipeline/config';
import type { ConnectorOptions } from '@pipeline/connectors';
import {
  defaultWarehouseTimeouts,
  clickhouseSettingsOf,
  guardedClickHouseClients,
  guardedWarehousePools,
  warehouseConnectionFromUrl,
  WarehouseEngines,
  warehousePoolLimitsOf,
  warehouseTimeoutsOf,
} from '@pipeline/destinations';
import { sharedGuardedFetch, type TenantUrlCheckOptions } from '@pipeline/egress';
import { createKafka } from '@pipeline/kafka';
import type { ShutdownStep } from '@pipeline/lifecycle';
import type { Logger } from '@pipeline/logger';
import { closeRedis, createRedis, redisConnectionOf, type RedisClient } from '@pipeline/redis';
import { createIsolatedVmRuntime, type FunctionRuntime } from '@pipeline/functions';
import { clientAddressResolver, TenantChangePublisher } from '@pipeline/tenancy';
import { AccountLimiter, type AccountLimits } from './accounts/account-limits';
import { createHttpApp, createOperatorApp, type HttpDependencies } from './app';
import { ConnectionAttemptLimit } from './apps/connection-attempts';
import { AppSettingsValidator } from './apps/app-settings';
import { AppService } from './apps/app.service';
import { CredentialCipher } from './apps/credential-cipher';
import { UnreadableCredentialsLog } from './apps/unreadable-credentials-log';
import { TenantUrlPolicy } from './apps/tenant-urls';
import { WarehouseAppCheck } from './apps/warehouse-app-check';
import { InternalTokens } from './auth/internal-tokens';
import { accountLimitsOf, maxRunningPerAccount, vendorAppTypes, type ControlPlaneConfig } from './config';
import { createDataSource } from './data-model';
import { DebuggerService } from './debugger/debugger.service';
import { PlanViolationsService } from './plan-violations/plan-violations.service';
import { DeadLetterIndexer } from './dead-letters/dead-letter-index';
import { eraseFromDeadLetters } from './dead-letters/dead-letter-erasure';
import { eraseFromDebugger } from './debugger/debugger-erasure';
import { RegulationFence } from './regulations/regulation-fence';
import { deletionSupportOf, resolvedIntegration } from './regulations/regulation-vendors';
import { defaultRegulationWorkerOptions, RegulationWorker } from './regulations/regulation-worker';
import { RegulationService, type RegulationLimits } from './regulations/regulation.service';
import { Regulations, type SubjectRowCounter } from './regulations/regulations';
import { KafkaDeadLetterReplayer, type DeadLetterReplayer } from './dead-letters/dead-letter-replayer';
import { DeadLetterService, type DeadLetterServiceOptions } from './dead-letters/dead-letter.service';
import { AccountReplayLimiter, WriteKeyEventCounter } from './dead-letters/dead-letter-replay-limits';
import type { DeadLetterLimits } from './dead-letters/dead-letter-limits';
import { ControlPlaneMetrics } from './metrics/control-plane-metrics';
import {
  IntegrationRunExecutor,
  recordIntegrationJobTransition,
} from './integrations/integration-run-executor';
import { dueIntegrations } from './integrations/integration-schedule';
import { IntegrationService } from './integrations/integration.service';
import { WriteKeyResolver } from './internal/write-key-resolver';
import { JobRunner } from './jobs/job-runner';
import { JobService } from './jobs/job.service';
import { Scheduler } from './jobs/scheduler';
import { AlertSender } from './plan-alerts/alert-sender';
import { PlanAlertService } from './plan-alerts/plan-alert.service';
import { dueSources } from './sources/source-schedule';
import { recordSourceJobTransition, SourceSyncExecutor } from './sources/source-sync-executor';
import { SourceService } from './sources/source.service';
import { TaskService } from './tasks/task.service';
import { TaskWorker } from './tasks/task-worker';
import {
  DEFAULT_WAREHOUSE_URL,
  OneWarehouse,
  PlacedWarehouses,
  defaultWarehouseMaxConnections,
  type AccountWarehouses,
} from './warehouse-access/account-warehouses';
import { defaultPrices, priceList, type PriceList } from './usage/price-list';
import { PgQueryMeter } from './warehouse-access/query-meter';
import { MeteringTimer, UsageMetering } from './usage/usage-metering';
import { UsageService } from './usage/usage.service';
import type { WriteKeyRateLimitCeilings } from './write-keys/rate-limits';
import { WriteKeyService } from './write-keys/write-key.service';
import { PlanFromTraffic } from './tracking-plans/plan-from-traffic';
import { TrackingPlanBindings } from './tracking-plans/tracking-plan-bindings';
import type { TrackingPlanLimits } from './tracking-plans/tracking-plan-limits';
import { TrackingPlanService } from './tracking-plans/tracking-plan.service';
import { FunctionBindings } from './functions/function-bindings';
import { FunctionService } from './functions/function.service';
import { FunctionTestRun } from './functions/function-test-run';
import { QuarantineService } from './quarantine/quarantine.service';
import { WarehousePlacements } from './warehouse-registry/warehouse-placements';
import { WarehouseMoves } from './warehouse-registry/warehouse-moves';
import { WarehouseMoveExecutor } from './warehouse-registry/warehouse-move-executor';
import { WarehouseRegistry, type EngineFor } from './warehouse-registry/warehouse-registry';
import { OperatorToken } from './auth/operator-token';

/** What the services need: the database, config values, and the callbacks that wake workers. */
export interface ServiceDependencies {
  dataSource: DataSource;
  /** Where the warehouse registry logs what it met (probes, sizes, the bootstrap). */
  logger: Logger;
  /** CREDENTIALS_ENCRYPTION_KEYS */
  credentialKeys: string;
  /** Where each account's warehouse is, for the task templates and usage (default: WAREHOUSE_URL's default). */
  warehouse?: AccountWarehouses;
  /** Called when a task run is queued (wakes an in-process worker). */
  onTaskRunQueued?: () => void;
  /** Called when a sync job is queued (wakes an in-process job runner). */
  onJobQueued?: () => void;
  /** Called when a job is cancelled by request (an in-process job runner stops it at once). */
  onJobCancelled?: (jobId: string) => void;
  /** The usage price list (default: the documented defaults). */
  prices?: PriceList;
  /** An account's time in a metering pass (USAGE_METERING_ACCOUNT_DEADLINE_MS). */
  meteringAccountDeadlineMs?: number;
  /** WRITE_KEY_MAX_EVENTS_PER_SECOND / _PER_DAY (default: the documented defaults). */
  writeKeyRateLimitCeilings?: WriteKeyRateLimitCeilings;
  /** What one account may hold (ACCOUNT_MAX_*; default: the documented defaults). */
  accountLimits?: AccountLimits;
  /** Broadcasts revocations and tenant changes to ingestion and the consumers (REDIS_URL). */
  tenantChanges?: TenantChangePublisher;
  /**
   * How URLs a tenant saves are judged (EGRESS_ALLOW_PRIVATE_RANGES; tests give a resolver):
   * by default public hosts only, names resolved by the system.
   */
  egress?: TenantUrlCheckOptions;
  /** The live debugger's Redis (AppDependencies.debugger); absent: its endpoints answer 503. */
  debugger?: { redis: RedisClient };
  /** Opens an engine on a warehouse (sizes and probes); absent: sizes are unknown, checks answer 503. */
  engineFor?: EngineFor;
  /**
   * The process's warehouse engines: with them each account is read and written on the
   * warehouse it is placed on, and the registry sizes and probes through them (engineFor unused).
   */
  engines?: WarehouseEngines;
  /** Puts dead letters back for delivery (Kafka); absent: replays answer 503 `dead_letters_unavailable`. */
  deadLetterReplayer?: DeadLetterReplayer;
  /** What an account's tracking plans may hold (default: the documented caps). */
  trackingPlanLimits?: TrackingPlanLimits;
  /** Runs tenant functions for the test call; absent: it answers 503 `function_runtime_unavailable`. */
  functionRuntime?: FunctionRuntime;
  /** REGULATION_SUBJECTS_PER_MONTH (default Segment's 110,000). */
  regulationLimits?: RegulationLimits;
  /** Counts a dry run's rows per warehouse table (tests give their own); absent: the account's warehouse engine counts. */
  subjectRowCounter?: SubjectRowCounter;
  /** The dead-letter index's limits, replay limiter and write-key counting (default: per instance, not counted). */
  deadLetterOptions?: DeadLetterServiceOptions;
  /** How a source app's connection test reaches its vendor (VENDOR_BASE_URL_*, EGRESS_ALLOW_PRIVATE_RANGES). */
  connectors?: ConnectorOptions;
  /**
   * APP_CONNECTION_TESTS_PER_MINUTE and the Redis its counters are kept in (null: in memory);
   * absent: connection tests are not counted (test graphs that make many).
   */
  connectionTests?: { perMinute: number; redis: RedisClient | null };
}

/**
 * The services of the control plane, built once: the HTTP API, the job runner's executors and
 * the usage metering timer share these instances (one cipher, one limiter, one job service).
 */
export function composeServices(deps: ServiceDependencies) {
  const { dataSource, tenantChanges } = deps;
  const credentialsLog = new UnreadableCredentialsLog(deps.logger);
  const cipher = new CredentialCipher(deps.credentialKeys, credentialsLog.onUnreadable);
  const limiter = new AccountLimiter(deps.accountLimits);
  const urls = new TenantUrlPolicy(deps.egress);
  const { engines } = deps;
  const warehouses = new WarehouseRegistry(dataSource, cipher, {
    engineFor: engines ? (connection) => engines.for(connection) : deps.engineFor,
    tenantChanges,
    logger: deps.logger,
  });
  // A customer's postgres_warehouse app is a warehouse of the registry: saved, edited and
  // removed with it.
  const apps = new AppService(
    dataSource,
    cipher,
    urls,
    tenantChanges,
    new AppSettingsValidator(),
    new WarehouseAppCheck(deps.egress),
    warehouses,
    deps.connectors,
    deps.connectionTests && new ConnectionAttemptLimit({ ...deps.connectionTests, logger: deps.logger }),
  );
  const jobs = new JobService(dataSource, deps.onJobQueued, limiter, deps.onJobCancelled)
    .followCancels('source_sync', recordSourceJobTransition)
    .followCancels('integration_run', recordIntegrationJobTransition);
  const sources = new SourceService(dataSource, apps, jobs, urls, limiter);
  const integrations = new IntegrationService(dataSource, apps, jobs, urls, tenantChanges, limiter);
  const writeKeys = new WriteKeyService(dataSource, deps.writeKeyRateLimitCeilings, tenantChanges, limiter);
  const placements = new WarehousePlacements(dataSource, warehouses, tenantChanges, deps.logger);
  const warehouseMoves = new WarehouseMoves(dataSource, warehouses, placements, {
    ...(deps.onJobQueued ? { onJobQueued: deps.onJobQueued } : {}),
    ...(deps.onJobCancelled ? { onJobCancelled: deps.onJobCancelled } : {}),
    ...(tenantChanges ? { tenantChanges } : {}),
  });
  // Publishing, binding, unbinding and deleting a plan are broadcast like any tenant change:
  // ingestion re-resolves the account's keys and holds their events to the new version.
  const trackingPlans = new TrackingPlanService(dataSource, tenantChanges, deps.trackingPlanLimits);
  const trackingPlanBindings = new TrackingPlanBindings(dataSource, tenantChanges);
  // Binding, unbinding and deleting a function are broadcast: the consumers look the account
  // up again and run the version now bound.
  const functions = new FunctionService(dataSource, tenantChanges);
  const functionBindings = new FunctionBindings(dataSource, tenantChanges);
  const writeKeyResolver = new WriteKeyResolver(
    dataSource,
    apps,
    placements,
    trackingPlanBindings,
    functionBindings,
  );
  // Each account's own warehouse, through the process's engines; without them (a test graph
  // that reads nothing), WAREHOUSE_URL's default database.
  const reader =
    deps.warehouse ??
    (deps.engines
      ? new PlacedWarehouses((accountId) => placements.resolve(accountId), deps.engines)
      : new OneWarehouse(
          WarehouseEngines.open(
            { processMaxConnections: 20, idleMs: 10_000 },
            {
              postgres: { timeouts: defaultWarehouseTimeouts },
              clickhouse: { timeouts: defaultWarehouseTimeouts },
            },
          ),
          warehouseConnectionFromUrl(DEFAULT_WAREHOUSE_URL, {
            maxConnections: defaultWarehouseMaxConnections,
          }),
        ));
  const tasks = new TaskService(dataSource, reader, deps.onTaskRunQueued, limiter);
  const metering = new UsageMetering(dataSource, reader, deps.prices ?? priceList(defaultPrices), {
    ...(deps.meteringAccountDeadlineMs ? { accountDeadlineMs: deps.meteringAccountDeadlineMs } : {}),
  });
  const usage = new UsageService(dataSource);
  const debuggerService = new DebuggerService(writeKeys, deps.debugger?.redis ?? null);
  const functionTests = new FunctionTestRun(functions, debuggerService, deps.functionRuntime);
  const deadLetters = new DeadLetterService(dataSource, deps.deadLetterReplayer, deps.deadLetterOptions);
  const quarantine = new QuarantineService(dataSource, trackingPlans, deps.deadLetterReplayer, {
    ...(deps.deadLetterOptions?.limits ? { limits: deps.deadLetterOptions.limits } : {}),
    ...(deps.deadLetterOptions?.replayLimiter ? { replayLimiter: deps.deadLetterOptions.replayLimiter } : {}),
  });
  const regulationService = new RegulationService(dataSource, cipher, tenantChanges, deps.regulationLimits);
  const regulations = new Regulations(
    regulationService,
    dataSource,
    placements,
    deps.subjectRowCounter ??
      (async (accountId, subjects) => {
        const located = await reader.locate(accountId);
        return located.engine.countSubjectRows(located.account, subjects);
      }),
    (appType, integrationId) =>
      deletionSupportOf(dataSource, cipher, (type) => deletionClientFor(type), appType, integrationId),
  );
  return {
    functions,
    functionBindings,
    functionTests,
    regulations,
    trackingPlans,
    planAlerts: new PlanAlertService(dataSource, cipher, urls),
    trackingPlanBindings,
    quarantine,
    planFromTraffic: new PlanFromTraffic(reader, trackingPlans, trackingPlanBindings),
    // Ingestion writes the counts: the debugger's client, without a key prefix, reads them.
    planViolations: new PlanViolationsService(trackingPlans, deps.debugger?.redis ?? null),
    deadLetters,
    warehouses,
    placements,
    warehouseMoves,
    accountWarehouses: reader,
    cipher,
    credentialsLog,
    limiter,
    apps,
    jobs,
    sources,
    integrations,
    writeKeys,
    writeKeyResolver,
    tasks,
    metering,
    usage,
    debugger: debuggerService,
  };
}

export type ControlPlaneServices = ReturnType<typeof composeServices>;

/** Everything the HTTP app is built from: the services' dependencies and the app's own. */
export interface AppDependencies
  extends Omit<ServiceDependencies, 'debugger'>, Omit<HttpDependencies, 'metrics'> {
  /** The process's metrics, shared with its job runner and task worker (default: the app's own). */
  metrics?: ControlPlaneMetrics;
  /** The live debugger (HttpDependencies.debugger); absent: its endpoints answer 503. */
  debugger?: HttpDependencies['debugger'];
}

/**
 * The services and the Express apps over them: one graph, as the process and the harness use
 * it. `app` is the public listener's, `operatorApp` the operator listener's (OPERATOR_PORT).
 */
export function composeApi(deps: AppDependencies): {
  services: ControlPlaneServices;
  app: Express;
  operatorApp: Express;
  metrics: ControlPlaneMetrics;
} {
  const services = composeServices(deps);
  const metrics =
    deps.metrics ?? new ControlPlaneMetrics({ dataSource: deps.dataSource, logger: deps.logger });
  return {
    services,
    metrics,
    app: createHttpApp(services, { ...deps, metrics }),
    operatorApp: createOperatorApp(services, { ...deps, metrics }),
  };
}

/** The control plane's Express app with its services composed from `deps`. */
export function createApp(deps: AppDependencies): Express {
  return composeApi(deps).app;
}

/** The control plane process's object graph, built once from its validated config. */
export interface ControlPlane {
  app: Express;
  /** The operator API's app, for OPERATOR_PORT; null while OPERATOR_API_TOKEN is unset (nothing to serve). */
  operatorApp: Express | null;
  services: ControlPlaneServices;
  /** Starts the workers the config enables: task worker, job runner, scheduler, usage metering. */
  start(): void;
  /** Every resource the graph opened, in the order to register them with `Shutdown`. */
  shutdownSteps: ShutdownStep[];
}

/**
 * Where tenant changes are broadcast (revoked write keys, rotated credentials) and the API rate
 * limit's shared counters live; null without REDIS_URL or REDIS_CLUSTER_NODES. Connected whether the rate limit is on
 * or not: a revocation must reach ingestion's caches at once either way.
 */
async function connectRedis(config: ControlPlaneConfig, logger: Logger): Promise<RedisClient | null> {
  const connection = redisConnectionOf(config);
  if (!connection) {
    logger.warn(
      'Neither REDIS_URL nor REDIS_CLUSTER_NODES is set: revocations and tenant changes are not broadcast (caches keep a tenant at most 10 s instead), and the API rate limit is counted per instance',
    );
    return null;
  }
  const redis = createRedis(connection, { logger, keyPrefix: 'control-plane:' });
  // Down at start is not fatal: the limiter counts locally until ioredis reconnects.
  await redis
    .connect()
    .catch((error: Error) => logger.warn('redis not reachable at start', { error: error.message }));
  return redis;
}

/** The live debugger's reads: no key prefix (ingestion and the consumers write the keys). */
async function connectDebuggerRedis(
  config: ControlPlaneConfig,
  logger: Logger,
): Promise<RedisClient | undefined> {
  const connection = redisConnectionOf(config);
  if (!connection) return undefined;
  const redis = createRedis(connection, { logger });
  await redis
    .connect()
    .catch((error: Error) => logger.warn('debugger redis not reachable at start', { error: error.message }));
  return redis;
}

export async function composeControlPlane(config: ControlPlaneConfig, logger: Logger): Promise<ControlPlane> {
  const dataSource = createDataSource({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX });
  await dataSource.initialize();
  const metrics = new ControlPlaneMetrics({ dataSource, logger });
  const queryMeter = new PgQueryMeter(dataSource);
  // One pool per warehouse for the API's reads, the task worker, source syncs and integration runs.
  const guard = { allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES };
  const meter = (accountId: string, purpose: 'query' | 'model_query', bytes: number) =>
    queryMeter.record(accountId, purpose, bytes);
  const engines = WarehouseEngines.open(warehousePoolLimitsOf(config), {
    postgres: { timeouts: warehouseTimeoutsOf(config), connect: guardedWarehousePools(guard), meter },
    clickhouse: {
      timeouts: warehouseTimeoutsOf(config),
      connect: guardedClickHouseClients(guard),
      meter,
      ...clickhouseSettingsOf(config),
    },
  });
  const prices = priceList({
    storagePerGbMonth: config.USAGE_PRICE_STORAGE_GB_MONTH,
    queryPerTb: config.USAGE_PRICE_QUERY_TB,
    computePerSecond: config.USAGE_PRICE_COMPUTE_SECOND,
    syncRowsPerMillion: config.USAGE_PRICE_MILLION_SYNC_ROWS,
  });
  const redis = await connectRedis(config, logger);
  const debuggerRedis = await connectDebuggerRedis(config, logger);
  const debuggerConnection = redisConnectionOf(config);

  const tenantChanges = new TenantChangePublisher(redis, logger);
  // The functions test call's sandbox: a child process forked on the first test, with an empty
  // environment, so tenant code never finds this process's credentials.
  const functionRuntime = createIsolatedVmRuntime();
  // The broker of the dead-letter index and of replays (the delivery consumers' topics).
  const kafka = createKafka(config, { clientId: 'control-plane', logger });
  const deadLetterReplayer = new KafkaDeadLetterReplayer(kafka, config.KAFKA_TOPIC_PREFIX);
  const deadLetterLimits: DeadLetterLimits = {
    maxPerAccount: config.DEAD_LETTER_INDEX_MAX_PER_ACCOUNT,
    retentionDays: config.DEAD_LETTER_INDEX_RETENTION_DAYS,
    replaysPerMinute: config.DEAD_LETTER_REPLAYS_PER_MINUTE,
  };
  // Built below the services that wake them; the callbacks read them once the graph is complete.
  let worker: TaskWorker | undefined;
  let jobs: JobRunner | undefined;
  const operatorToken = new OperatorToken(config.OPERATOR_API_TOKEN);
  const { services, app, operatorApp } = composeApi({
    dataSource,
    logger,
    credentialKeys: config.CREDENTIALS_ENCRYPTION_KEYS,
    internalTokens: InternalTokens.fromConfig(config, forwardingAppTypes),
    operatorToken,
    operatorTokenFailures: {
      perMinute: config.OPERATOR_TOKEN_FAILURES_PER_MINUTE,
      redis,
      // No proxy stands before the operator listener: a caller's X-Forwarded-For would only
      // let it pick the address its failures count against.
      clientAddress: clientAddressResolver(undefined),
    },
    engines,
    onTaskRunQueued: () => worker?.wake(),
    onJobQueued: () => jobs?.wake(),
    onJobCancelled: (jobId) => jobs?.cancelled(jobId),
    prices,
    meteringAccountDeadlineMs: config.USAGE_METERING_ACCOUNT_DEADLINE_MS,
    accountLimits: accountLimitsOf(config),
    writeKeyRateLimitCeilings: {
      eventsPerSecond: config.WRITE_KEY_MAX_EVENTS_PER_SECOND,
      eventsPerDay: config.WRITE_KEY_MAX_EVENTS_PER_DAY,
    },
    apiRateLimit: {
      enabled: config.API_RATE_LIMIT_ENABLED,
      perMinute: config.API_RATE_LIMIT_PER_MINUTE,
      redis: config.API_RATE_LIMIT_ENABLED ? redis : null,
    },
    apiKeyFailures: {
      perMinute: config.API_KEY_FAILURES_PER_MINUTE,
      // Counted whether or not API_RATE_LIMIT_ENABLED, in the service's own Redis client
      // (keys control-plane:api-key-failures:…).
      redis,
      clientAddress: clientAddressResolver(config.TRUSTED_PROXIES),
    },
    tenantChanges,
    functionRuntime,
    egress: { allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES },
    // Counted whether or not API_RATE_LIMIT_ENABLED (keys control-plane:connection-tests:…).
    connectionTests: { perMinute: config.APP_CONNECTION_TESTS_PER_MINUTE, redis },
    connectors: {
      baseUrls: vendorBaseUrlsOf(config, vendorAppTypes),
      allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
    },
    metrics,
    deadLetterReplayer,
    regulationLimits: { subjectsPerMonth: config.REGULATION_SUBJECTS_PER_MONTH },
    deadLetterOptions: {
      limits: deadLetterLimits,
      replayLimiter: new AccountReplayLimiter(deadLetterLimits.replaysPerMinute, redis, logger),
      // Ingestion's counters carry its own prefix: the client without one (the debugger's).
      ...(debuggerRedis ? { writeKeyEvents: new WriteKeyEventCounter(debuggerRedis, logger) } : {}),
    },
    ...(debuggerRedis && debuggerConnection
      ? { debugger: { redis: debuggerRedis, connection: debuggerConnection } }
      : {}),
  });

  // Before anything serves: the default warehouse exists and every account is placed, so an
  // upgrade needs no manual step (several processes starting at once create one default);
  // customers' warehouse apps saved before the registry knew them become its warehouses.
  await services.warehouses.bootstrap(config.WAREHOUSE_URL);
  const warehouseApps = await services.apps.registerWarehouseApps();
  if (warehouseApps.registered > 0)
    logger.info('warehouse apps registered', { registered: warehouseApps.registered });
  if (warehouseApps.refused.length > 0)
    logger.warn('warehouse apps not registered: their owners must correct them', {
      refused: warehouseApps.refused,
    });
  // Credentials the keys cannot open are said once, here, with the fix; the warehouses among
  // them show it in their status (the console's warehouse page).
  services.credentialsLog.startAudited([
    ...(await services.warehouses.auditSeals()),
    ...(await services.apps.unreadableCredentials()),
    ...(await services.planAlerts.unreadableSecrets()),
  ]);
  const warehouse = services.accountWarehouses;

  // The order main registers them in; hooks run in reverse, so the workers stop before the
  // pools close and tracing (registered by main before these) exports every step's spans.
  const shutdownSteps: ShutdownStep[] = [
    { name: 'database pool', run: () => dataSource.destroy() },
    { name: 'warehouse pools', run: () => engines.close() },
    { name: 'dead-letter replay producer', run: () => deadLetterReplayer.close() },
    { name: 'function runtime', run: () => functionRuntime.close() },
  ];
  const starters: { start(): void }[] = [];

  if (config.TASK_WORKER_ENABLED) {
    const running = new TaskWorker({
      dataSource,
      warehouse,
      logger,
      concurrency: config.TASK_WORKER_CONCURRENCY,
      maxRunningPerAccount: maxRunningPerAccount(
        config.TASK_RUN_MAX_RUNNING_PER_ACCOUNT,
        config.TASK_WORKER_CONCURRENCY,
      ),
      pollIntervalMs: config.TASK_WORKER_POLL_INTERVAL_MS,
      heartbeatIntervalMs: config.TASK_RUN_HEARTBEAT_INTERVAL_MS,
      staleAfterMs: config.TASK_RUN_STALE_AFTER_MS,
      maxAttempts: config.TASK_RUN_MAX_ATTEMPTS,
      metrics,
    });
    worker = running;
    starters.push(running);
    shutdownSteps.push({ name: 'task worker', run: () => running.stop() });
  }

  if (config.JOB_WORKER_ENABLED) {
    const baseUrls = vendorBaseUrlsOf(config, vendorAppTypes);
    const running = new JobRunner({
      dataSource,
      logger,
      concurrency: config.JOB_WORKER_CONCURRENCY,
      maxRunningPerAccount: maxRunningPerAccount(
        config.JOB_MAX_RUNNING_PER_ACCOUNT,
        config.JOB_WORKER_CONCURRENCY,
      ),
      pollIntervalMs: config.JOB_POLL_INTERVAL_MS,
      heartbeatIntervalMs: config.JOB_HEARTBEAT_INTERVAL_MS,
      staleAfterMs: config.JOB_STALE_AFTER_MS,
      maxAttempts: config.JOB_MAX_ATTEMPTS,
      retryBaseMs: config.JOB_RETRY_BASE_MS,
      retryMaxMs: config.JOB_RETRY_MAX_MS,
      metrics,
    })
      .register(
        new SourceSyncExecutor({
          dataSource,
          warehouse,
          logger,
          cipher: services.cipher,
          baseUrls,
          allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
        }),
      )
      .register(
        new IntegrationRunExecutor({
          dataSource,
          warehouse,
          logger,
          cipher: services.cipher,
          jobs: services.jobs,
          dependencyRetryMs: config.INTEGRATION_DEPENDENCY_RETRY_MS,
          baseUrls,
          allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
          regulationOf: (accountId) => services.regulations.service.regulationOf(accountId),
        }),
      )
      .register(
        new WarehouseMoveExecutor({
          dataSource,
          registry: services.warehouses,
          engineFor: (connection) => engines.for(connection),
          tenantChanges,
          logger,
          timings: {
            consumerWaitMs: config.WAREHOUSE_MOVE_CONSUMER_WAIT_MS,
            deadlineMs: config.WAREHOUSE_MOVE_DEADLINE_MS,
            drainMs: config.WAREHOUSE_MOVE_DRAIN_MS,
            batchRows: config.WAREHOUSE_MOVE_BATCH_ROWS,
          },
        }),
      );
    jobs = running;
    starters.push(running);
    shutdownSteps.push({ name: 'job runner', run: () => running.stop() });
  }

  if (config.SCHEDULER_ENABLED) {
    const scheduler = new Scheduler({
      dataSource,
      logger,
      intervalMs: config.SCHEDULER_INTERVAL_MS,
      onQueued: () => jobs?.wake(),
    })
      .register('sources', dueSources(services.jobs))
      .register('integrations', dueIntegrations(services.jobs));
    starters.push(scheduler);
    shutdownSteps.push({ name: 'scheduler', run: () => scheduler.stop() });
  }

  if (config.USAGE_METERING_ENABLED) {
    const metering = new MeteringTimer(services.metering, logger, config.USAGE_METERING_INTERVAL_MS);
    starters.push(metering);
    shutdownSteps.push({ name: 'usage metering', run: () => metering.stop() });
  }

  if (config.DEAD_LETTER_INDEX_ENABLED) {
    const indexer = new DeadLetterIndexer({
      kafka,
      dataSource,
      logger,
      kinds: deliveryKinds,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      replicationFactor: config.KAFKA_REPLICATION_FACTOR,
      limits: deadLetterLimits,
      // Read per record, uncached: an erasure scan under way never misses a row indexed behind it.
      regulationOf: (accountId) => services.regulations.service.regulationOf(accountId),
    });
    starters.push(indexer);
    shutdownSteps.push({ name: 'dead-letter index', run: () => indexer.stop() });
  }

  if (config.REGULATION_WORKER_ENABLED) {
    const fence = new RegulationFence(kafka, config.KAFKA_TOPIC_PREFIX);
    const baseUrls = vendorBaseUrlsOf(config, vendorAppTypes);
    const regulationWorker = new RegulationWorker(
      {
        dataSource,
        service: services.regulations.service,
        cipher: services.cipher,
        warehouses: warehouse,
        fence,
        eraseDeadLetters: (accountId, regulation, options) =>
          eraseFromDeadLetters(dataSource, accountId, regulation, options),
        eraseDebugger: debuggerRedis
          ? (writeKeyIds, regulation) => eraseFromDebugger(debuggerRedis, writeKeyIds, regulation)
          : null,
        vendorClient: (appType) =>
          deletionClientFor(appType, { baseUrls, allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES }),
        resolveIntegration: (integrationId) =>
          resolvedIntegration(dataSource, services.cipher, integrationId),
        logger,
      },
      {
        ...defaultRegulationWorkerOptions,
        intervalMs: config.REGULATION_WORKER_INTERVAL_MS,
        fenceDelayMs: config.REGULATION_FENCE_DELAY_MS,
        warehouseRowsPerStep: config.REGULATION_WAREHOUSE_ROWS_PER_STEP,
        vendorPollMs: config.REGULATION_VENDOR_POLL_MS,
        leaseMs: config.REGULATION_LEASE_MS,
      },
    );
    starters.push(regulationWorker);
    shutdownSteps.push({
      name: 'regulation worker',
      run: async () => {
        await regulationWorker.stop();
        await fence.close();
      },
    });
  }

  // Reads ingestion's violation counts: the debugger's client, without this service's key prefix.
  if (config.PLAN_ALERTS_ENABLED && debuggerRedis) {
    const alerts = new AlertSender({
      dataSource,
      redis: debuggerRedis,
      cipher: services.cipher,
      logger,
      fetch: sharedGuardedFetch(config.EGRESS_ALLOW_PRIVATE_RANGES),
      intervalMs: config.PLAN_ALERTS_INTERVAL_MS,
      concurrency: config.PLAN_ALERTS_CONCURRENCY,
      timeoutMs: config.PLAN_ALERTS_TIMEOUT_MS,
    });
    starters.push(alerts);
    shutdownSteps.push({ name: 'plan alerts', run: () => alerts.stop() });
  }

  if (redis) shutdownSteps.push({ name: 'redis', run: () => closeRedis(redis) });
  if (debuggerRedis) shutdownSteps.push({ name: 'debugger redis', run: () => closeRedis(debuggerRedis) });

  return {
    app,
    operatorApp: operatorToken.enabled ? operatorApp : null,
    services,
    shutdownSteps,
    start: () => {
      for (const starter of starters) starter.start();
    },
  };
}
