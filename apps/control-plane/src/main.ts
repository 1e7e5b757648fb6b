// First: the Node version check, then tracing, which instruments modules as they load.
import './node-runtime';
import { tracing } from './tracing';
import { forwardingAppTypes } from '@pipeline/catalog';
import { loadConfigOrExit, vendorBaseUrlsOf } from '@pipeline/config';
import { serveHttp, Shutdown, startService } from '@pipeline/lifecycle';
import { StreamTableWriter, warehouseTimeoutsOf } from '@pipeline/destinations';
import { createLogger, type Logger } from '@pipeline/logger';
import { closeRedis, createRedis, type Redis } from '@pipeline/redis';
import { clientAddressResolver, TenantChangePublisher } from '@pipeline/tenancy';
import { AccountLimiter } from './accounts/account-limits';
import { createApp } from './app';
import { InternalTokens } from './auth/internal-tokens';
import { ControlPlaneMetrics } from './metrics/control-plane-metrics';
import {
  accountLimitsOf,
  controlPlaneConfigSchema,
  maxRunningPerAccount,
  vendorAppTypes,
  type ControlPlaneConfig,
} from './config';
import { createDataSource } from './data-model';
import { TaskWorker } from './tasks/task-worker';
import { CredentialCipher } from './apps/credential-cipher';
import { JobRunner } from './jobs/job-runner';
import { JobService } from './jobs/job.service';
import { Scheduler } from './jobs/scheduler';
import { IntegrationRunExecutor } from './integrations/integration-run-executor';
import { dueIntegrations } from './integrations/integration-schedule';
import { dueSources } from './sources/source-schedule';
import { SourceSyncExecutor } from './sources/source-sync-executor';
import { priceList } from './usage/price-list';
import { PgQueryMeter } from './warehouse/query-meter';
import { MeteringTimer, UsageMetering } from './usage/usage-metering';
import { WarehouseReader } from './warehouse/warehouse-reader';

/**
 * Where tenant changes are broadcast (revoked write keys, rotated credentials) and the API rate
 * limit's shared counters live; null without REDIS_URL. Connected whether the rate limit is on
 * or not: a revocation must reach ingestion's caches at once either way.
 */
async function connectRedis(
  config: ControlPlaneConfig,
  logger: Logger,
  shutdown: Shutdown,
): Promise<Redis | null> {
  if (!config.REDIS_URL) {
    logger.warn(
      'REDIS_URL is not set: revocations and tenant changes are not broadcast (caches keep a tenant at most 10 s instead), and the API rate limit is counted per instance',
    );
    return null;
  }
  const redis = createRedis({ REDIS_URL: config.REDIS_URL }, { logger, keyPrefix: 'control-plane:' });
  // Down at start is not fatal: the limiter counts locally until ioredis reconnects.
  await redis
    .connect()
    .catch((error: Error) => logger.warn('redis not reachable at start', { error: error.message }));
  shutdown.add('redis', () => closeRedis(redis));
  return redis;
}

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

  const dataSource = createDataSource({ url: config.DATABASE_URL, poolMax: config.DATABASE_POOL_MAX });
  await dataSource.initialize();
  shutdown.add('database pool', () => dataSource.destroy());
  const metrics = new ControlPlaneMetrics({ dataSource, logger });
  const warehouse = new WarehouseReader(config.WAREHOUSE_URL, { meter: new PgQueryMeter(dataSource) });
  const prices = priceList({
    storagePerGbMonth: config.USAGE_PRICE_STORAGE_GB_MONTH,
    queryPerTb: config.USAGE_PRICE_QUERY_TB,
    computePerSecond: config.USAGE_PRICE_COMPUTE_SECOND,
    syncRowsPerMillion: config.USAGE_PRICE_MILLION_SYNC_ROWS,
  });
  shutdown.add('warehouse pool', () => warehouse.close());

  // The task worker runs in this process; hooks run in reverse, so it stops before the pools close.
  let worker: TaskWorker | undefined;
  if (config.TASK_WORKER_ENABLED) {
    worker = new TaskWorker({
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
    worker.start();
    const running = worker;
    shutdown.add('task worker', () => running.stop());
  }

  // The job runner and the scheduler stop before the pools close, like the task worker.
  let jobs: JobRunner | undefined;
  const cipher = new CredentialCipher(config.CREDENTIALS_ENCRYPTION_KEYS);
  const baseUrls = vendorBaseUrlsOf(config, vendorAppTypes);
  const limiter = new AccountLimiter(accountLimitsOf(config));
  const jobService = new JobService(dataSource, () => jobs?.wake(), limiter);
  if (config.JOB_WORKER_ENABLED) {
    const writer = new StreamTableWriter(config.WAREHOUSE_URL, { timeouts: warehouseTimeoutsOf(config) });
    shutdown.add('warehouse writer', () => writer.close());
    jobs = new JobRunner({
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
          writer,
          logger,
          cipher,
          baseUrls,
          allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
        }),
      )
      .register(
        new IntegrationRunExecutor({
          dataSource,
          warehouse,
          logger,
          cipher,
          jobs: jobService,
          dependencyRetryMs: config.INTEGRATION_DEPENDENCY_RETRY_MS,
          baseUrls,
          allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES,
        }),
      );
    jobs.start();
    const running = jobs;
    shutdown.add('job runner', () => running.stop());
  }
  if (config.SCHEDULER_ENABLED) {
    const scheduler = new Scheduler({
      dataSource,
      logger,
      intervalMs: config.SCHEDULER_INTERVAL_MS,
      onQueued: () => jobs?.wake(),
    })
      .register('sources', dueSources(jobService))
      .register('integrations', dueIntegrations(jobService));
    scheduler.start();
    shutdown.add('scheduler', () => scheduler.stop());
  }

  if (config.USAGE_METERING_ENABLED) {
    const metering = new MeteringTimer(
      new UsageMetering(dataSource, warehouse, prices),
      logger,
      config.USAGE_METERING_INTERVAL_MS,
    );
    metering.start();
    shutdown.add('usage metering', () => metering.stop());
  }

  const redis = await connectRedis(config, logger, shutdown);
  let debuggerRedis: Redis | undefined;
  if (config.REDIS_URL) {
    // The live debugger's reads: no key prefix (ingestion and the consumers write the keys).
    debuggerRedis = createRedis({ REDIS_URL: config.REDIS_URL }, { logger });
    await debuggerRedis
      .connect()
      .catch((error: Error) =>
        logger.warn('debugger redis not reachable at start', { error: error.message }),
      );
    const client = debuggerRedis;
    shutdown.add('debugger redis', () => closeRedis(client));
  }
  await serveHttp(
    createApp({
      dataSource,
      logger,
      credentialKeys: config.CREDENTIALS_ENCRYPTION_KEYS,
      internalTokens: InternalTokens.fromConfig(config, forwardingAppTypes),
      warehouse,
      onTaskRunQueued: () => worker?.wake(),
      onJobQueued: () => jobs?.wake(),
      prices,
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
      tenantChanges: new TenantChangePublisher(redis, logger),
      egress: { allowPrivateRanges: config.EGRESS_ALLOW_PRIVATE_RANGES },
      metrics,
      ...(debuggerRedis && config.REDIS_URL
        ? { debugger: { redis: debuggerRedis, redisUrl: config.REDIS_URL } }
        : {}),
    }),
    {
      host: config.HOST,
      port: config.PORT,
      logger,
      shutdown,
    },
  );
}

startService('control-plane', main);
