import 'reflect-metadata';
import express, { type Express } from 'express';
import type { DataSource } from 'typeorm';
import { livenessAnswer, readiness } from '@pipeline/lifecycle';
import { requestLogging, type Logger } from '@pipeline/logger';
import type { TenantUrlCheckOptions } from '@pipeline/egress';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import { AccountLimiter, type AccountLimits } from './accounts/account-limits';
import { AppTypesController } from './app-types/app-type.controller';
import { AppsController } from './apps/app.controller';
import { AppService } from './apps/app.service';
import { CredentialCipher } from './apps/credential-cipher';
import { ApiKeyAuthenticator } from './auth/api-key-authenticator';
import { AUTHENTICATOR, INTERNAL_TOKENS } from './auth/authentication';
import type { InternalTokens } from './auth/internal-tokens';
import { HealthController } from './health/health.controller';
import { IntegrationsController } from './integrations/integration.controller';
import { JobsController } from './jobs/job.controller';
import { IntegrationService } from './integrations/integration.service';
import { WriteKeyResolutionController } from './internal/write-key-resolution.controller';
import { WriteKeyResolver } from './internal/write-key-resolver';
import { JobService } from './jobs/job.service';
import { SourcesController } from './sources/source.controller';
import { SourceService } from './sources/source.service';
import { mcpRouter } from './tasks/mcp-server';
import { TasksController } from './tasks/task.controller';
import { TaskService } from './tasks/task.service';
import { TemplatesController } from './tasks/template.controller';
import { DEFAULT_WAREHOUSE_URL, WarehouseReader } from './warehouse/warehouse-reader';
import { defaultPrices, priceList, type PriceList } from './usage/price-list';
import { UsageController } from './usage/usage.controller';
import { UsageMetering } from './usage/usage-metering';
import { UsageService } from './usage/usage.service';
import { WriteKeysController } from './write-keys/write-key.controller';
import { DebuggerController } from './debugger/debugger.controller';
import { DebuggerService } from './debugger/debugger.service';
import { debugStreamRouter } from './debugger/debugger-stream';
import type { Redis } from '@pipeline/redis';
import { WriteKeyService } from './write-keys/write-key.service';
import type { WriteKeyRateLimitCeilings } from './write-keys/rate-limits';
import { CONTROLLERS, type ControllerRegistry } from './http/controller-registry';
import { apiDocsRouter } from './http/api-docs';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { TenantUrlPolicy } from './apps/tenant-urls';
import { apiRateLimit, RATE_LIMITED_PATHS, type ApiRateLimitOptions } from './auth/api-rate-limit';
import { apiKeyFailureLimit, type ApiKeyFailureLimitOptions } from './auth/api-key-failures';
import { ControlPlaneMetrics } from './metrics/control-plane-metrics';
import { consoleRouter } from './console/console-files';
import { RegisterRoutes } from './generated/routes';
import openApiDocument from './generated/openapi.json';

export interface AppDependencies {
  dataSource: DataSource;
  logger: Logger;
  /** CREDENTIALS_ENCRYPTION_KEYS */
  credentialKeys: string;
  /** INTERNAL_TOKEN_INGESTION and INTERNAL_TOKEN_DELIVERY_<APP TYPE>: each internal caller's own token. */
  internalTokens: InternalTokens;
  /** Read access to the warehouse, for the task templates (default: WAREHOUSE_URL's default). */
  warehouse?: WarehouseReader;
  /** Called when a task run is queued (wakes an in-process worker). */
  onTaskRunQueued?: () => void;
  /** Called when a sync job is queued (wakes an in-process job runner). */
  onJobQueued?: () => void;
  /** The usage price list (default: the documented defaults). */
  prices?: PriceList;
  /** WRITE_KEY_MAX_EVENTS_PER_SECOND / _PER_DAY (default: the documented defaults). */
  writeKeyRateLimitCeilings?: WriteKeyRateLimitCeilings;
  /** What one account may hold (ACCOUNT_MAX_*; default: the documented defaults). */
  accountLimits?: AccountLimits;
  /** The per-API-key request limit (API_RATE_LIMIT_*); absent: not limited. */
  apiRateLimit?: ApiRateLimitOptions;
  /** Unknown or revoked API keys per client address (API_KEY_FAILURES_PER_MINUTE); absent: not limited. */
  apiKeyFailures?: ApiKeyFailureLimitOptions;
  /** Broadcasts revocations and tenant changes to ingestion and the consumers (REDIS_URL). */
  tenantChanges?: TenantChangePublisher;
  /** The process's metrics, shared with its job runner and task worker (default: the app's own). */
  metrics?: ControlPlaneMetrics;
  /**
   * The live event debugger's Redis (REDIS_URL, without a key prefix): `redis` for the lists,
   * `redisUrl` for the streams' own connections. Absent: its endpoints answer 503.
   */
  debugger?: {
    redis: Redis;
    redisUrl: string;
    maxStreamsPerKey?: number;
    keepAliveMs?: number;
    revalidateMs?: number;
  };
  /**
   * How URLs a tenant saves are judged (EGRESS_ALLOW_PRIVATE_RANGES; tests give a resolver):
   * by default public hosts only, names resolved by the system.
   */
  egress?: TenantUrlCheckOptions;
}

/** The services of the control plane, shared by the HTTP API and the operator CLI. */
export function createServices({
  dataSource,
  credentialKeys,
  warehouse,
  onTaskRunQueued,
  onJobQueued,
  prices,
  writeKeyRateLimitCeilings,
  tenantChanges,
  accountLimits,
  egress,
}: Pick<
  AppDependencies,
  | 'dataSource'
  | 'credentialKeys'
  | 'warehouse'
  | 'onTaskRunQueued'
  | 'onJobQueued'
  | 'prices'
  | 'writeKeyRateLimitCeilings'
  | 'tenantChanges'
  | 'accountLimits'
  | 'egress'
>) {
  const limiter = new AccountLimiter(accountLimits);
  const urls = new TenantUrlPolicy(egress);
  const apps = new AppService(dataSource, new CredentialCipher(credentialKeys), urls, tenantChanges);
  const jobs = new JobService(dataSource, onJobQueued, limiter);
  const sources = new SourceService(dataSource, apps, jobs, urls, limiter);
  const integrations = new IntegrationService(dataSource, apps, jobs, urls, tenantChanges, limiter);
  const writeKeys = new WriteKeyService(dataSource, writeKeyRateLimitCeilings, tenantChanges, limiter);
  const writeKeyResolver = new WriteKeyResolver(dataSource, apps);
  const reader = warehouse ?? new WarehouseReader(DEFAULT_WAREHOUSE_URL);
  const tasks = new TaskService(dataSource, reader, onTaskRunQueued, limiter);
  const metering = new UsageMetering(dataSource, reader, prices ?? priceList(defaultPrices));
  const usage = new UsageService(dataSource);
  return { apps, jobs, sources, integrations, writeKeys, writeKeyResolver, tasks, metering, usage };
}

export function createApp(deps: AppDependencies): Express {
  const { dataSource, logger } = deps;
  const services = createServices(deps);
  const debuggerService = new DebuggerService(services.writeKeys, deps.debugger?.redis ?? null);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  const controllers: ControllerRegistry = new Map<abstract new (...args: never[]) => unknown, unknown>([
    [HealthController, new HealthController(dataSource)],
    [AppsController, new AppsController(services.apps)],
    [AppTypesController, new AppTypesController()],
    [SourcesController, new SourcesController(services.sources)],
    [JobsController, new JobsController(services.jobs)],
    [IntegrationsController, new IntegrationsController(services.integrations)],
    [WriteKeysController, new WriteKeysController(services.writeKeys)],
    [TasksController, new TasksController(services.tasks)],
    [TemplatesController, new TemplatesController(services.tasks)],
    [WriteKeyResolutionController, new WriteKeyResolutionController(services.writeKeyResolver)],
    [UsageController, new UsageController(services.usage)],
    [DebuggerController, new DebuggerController(debuggerService)],
  ]);
  app.locals[CONTROLLERS] = controllers;
  const authenticator = new ApiKeyAuthenticator(dataSource);
  app.locals[AUTHENTICATOR] = authenticator;
  app.locals[INTERNAL_TOKENS] = deps.internalTokens;

  const metrics = deps.metrics ?? new ControlPlaneMetrics({ dataSource, logger });
  app.use(metrics.httpMiddleware());
  // Prometheus scrapes it in the cluster (not logged each time): no key, outside the OpenAPI
  // document, and never routed by the Ingress, which routes /api/v1 and /docs only.
  app.get('/metrics', metrics.handler());
  app.use(requestLogging(logger));
  // The probes (docs/operations.md, "Probes"): plain routes, not tsoa's, so they stay out of
  // the API document; ahead of the body parser and the limiter, with no key. /health (tsoa) is
  // unchanged.
  app.get('/livez', (_req, res) => {
    res.status(livenessAnswer.status).json(livenessAnswer.body);
  });
  app.get('/readyz', (_req, res, next) => {
    readiness(
      { database: () => dataSource.query('SELECT 1') },
      {
        onFailure: (check, error) =>
          logger.warn('not ready', { check, error: error instanceof Error ? error.message : String(error) }),
      },
    ).then(({ status, body }) => res.status(status).json(body), next);
  });
  app.use(express.json({ limit: '1mb', strict: true }));
  // Mounted ahead of the limiter: the public document costs nothing and needs no key.
  app.get('/api/v1/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  // The browsable reference, with its assets served from the package: no CDN needed.
  app.use(apiDocsRouter());
  // The web console (docs/console.md): static files only; it calls /api/v1 like any client.
  app.use(consoleRouter());
  // /health, /docs and /internal/v1 (the services' token, not API keys) are outside these paths.
  // Failed keys first: a throttled address is refused before the per-key limiter counts anything.
  if (deps.apiKeyFailures)
    app.use(RATE_LIMITED_PATHS, apiKeyFailureLimit(authenticator, deps.apiKeyFailures, logger));
  if (deps.apiRateLimit?.enabled)
    app.use(RATE_LIMITED_PATHS, apiRateLimit(authenticator, deps.apiRateLimit, logger));
  app.use(
    debugStreamRouter(authenticator, debuggerService, logger, {
      redisUrl: deps.debugger?.redisUrl,
      ...(deps.debugger?.maxStreamsPerKey ? { maxStreamsPerKey: deps.debugger.maxStreamsPerKey } : {}),
      ...(deps.debugger?.keepAliveMs ? { keepAliveMs: deps.debugger.keepAliveMs } : {}),
      ...(deps.debugger?.revalidateMs ? { revalidateMs: deps.debugger.revalidateMs } : {}),
    }),
  );
  RegisterRoutes(app);
  app.use(mcpRouter(authenticator, services.tasks));
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}
