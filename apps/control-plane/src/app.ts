import 'reflect-metadata';
import express, { type Express } from 'express';
import type { DataSource } from 'typeorm';
import { livenessAnswer, readiness } from '@pipeline/lifecycle';
import { requestLogging, type Logger } from '@pipeline/logger';
import { AppTypesController } from './app-types/app-type.controller';
import { AppsController } from './apps/app.controller';
import type { AppService } from './apps/app.service';
import { ApiKeyAuthenticator } from './auth/api-key-authenticator';
import { AUTHENTICATOR, INTERNAL_TOKENS } from './auth/authentication';
import type { InternalTokens } from './auth/internal-tokens';
import { OPERATOR_TOKEN } from './auth/authentication';
import { OperatorToken } from './auth/operator-token';
import { WarehouseResolutionController } from './internal/warehouse-resolution.controller';
import { OperatorWarehousesController } from './warehouse-registry/operator-warehouses.controller';
import { AccountWarehouseController } from './tenant-warehouse/account-warehouse.controller';
import { OperatorWarehouseMovesController } from './warehouse-registry/operator-warehouse-moves.controller';
import type { WarehouseMoves } from './warehouse-registry/warehouse-moves';
import type { WarehousePlacements } from './warehouse-registry/warehouse-placements';
import type { WarehouseRegistry } from './warehouse-registry/warehouse-registry';
import { HealthController } from './health/health.controller';
import { IntegrationsController } from './integrations/integration.controller';
import { JobsController } from './jobs/job.controller';
import type { IntegrationService } from './integrations/integration.service';
import { WriteKeyResolutionController } from './internal/write-key-resolution.controller';
import type { WriteKeyResolver } from './internal/write-key-resolver';
import type { JobService } from './jobs/job.service';
import { SourcesController } from './sources/source.controller';
import type { SourceService } from './sources/source.service';
import { mcpRouter } from './tasks/mcp-server';
import { TasksController } from './tasks/task.controller';
import type { TaskService } from './tasks/task.service';
import { TemplatesController } from './tasks/template.controller';
import { UsageController } from './usage/usage.controller';
import { MeController } from './me/me.controller';
import type { UsageService } from './usage/usage.service';
import { WriteKeysController } from './write-keys/write-key.controller';
import { DebuggerController } from './debugger/debugger.controller';
import { DeadLettersController } from './dead-letters/dead-letter.controller';
import { RegulatedSubjectsController } from './internal/regulated-subjects.controller';
import { OperatorRegulationsController } from './regulations/operator-regulations.controller';
import { RegulationsController, SuppressionsController } from './regulations/regulation.controller';
import type { Regulations } from './regulations/regulations';
import { TrackingPlanVersionsController } from './internal/tracking-plan-versions.controller';
import {
  TrackingPlansController,
  WriteKeyTrackingPlanController,
} from './tracking-plans/tracking-plan.controller';
import type { PlanFromTraffic } from './tracking-plans/plan-from-traffic';
import type { TrackingPlanBindings } from './tracking-plans/tracking-plan-bindings';
import type { TrackingPlanService } from './tracking-plans/tracking-plan.service';
import {
  FunctionsController,
  IntegrationFunctionController,
  WarehouseFunctionController,
  WriteKeyFunctionController,
} from './functions/function.controller';
import type { FunctionBindings } from './functions/function-bindings';
import type { FunctionService } from './functions/function.service';
import type { FunctionTestRun } from './functions/function-test-run';
import { QuarantineController } from './quarantine/quarantine.controller';
import { PlanAlertController } from './plan-alerts/plan-alert.controller';
import type { PlanAlertService } from './plan-alerts/plan-alert.service';
import { PlanViolationsController } from './plan-violations/plan-violations.controller';
import type { QuarantineService } from './quarantine/quarantine.service';
import type { DeadLetterService } from './dead-letters/dead-letter.service';
import type { DebuggerService } from './debugger/debugger.service';
import type { PlanViolationsService } from './plan-violations/plan-violations.service';
import { debugStreamRouter } from './debugger/debugger-stream';
import type { RedisClient, RedisConnection } from '@pipeline/redis';
import type { WriteKeyService } from './write-keys/write-key.service';
import { CONTROLLERS, type ControllerRegistry } from './http/controller-registry';
import { apiDocsRouter } from './http/api-docs';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { apiRateLimit, RATE_LIMITED_PATHS, type ApiRateLimitOptions } from './auth/api-rate-limit';
import { apiKeyFailureLimit, type ApiKeyFailureLimitOptions } from './auth/api-key-failures';
import {
  operatorTokenFailureLimit,
  type OperatorTokenFailureLimitOptions,
} from './auth/operator-token-failures';
import type { ControlPlaneMetrics } from './metrics/control-plane-metrics';
import { consoleRouter } from './console/console-files';
import { RegisterRoutes } from './generated/routes';
import { checkInternalRoutes } from './auth/route-security';
import openApiDocument from './generated/openapi.json';

/** The services the HTTP API calls; composition.ts builds them once for the whole process. */
export interface ApiServices {
  apps: AppService;
  jobs: JobService;
  sources: SourceService;
  integrations: IntegrationService;
  writeKeys: WriteKeyService;
  writeKeyResolver: WriteKeyResolver;
  tasks: TaskService;
  usage: UsageService;
  debugger: DebuggerService;
  deadLetters: DeadLetterService;
  warehouses: WarehouseRegistry;
  placements: WarehousePlacements;
  warehouseMoves: WarehouseMoves;
  regulations: Regulations;
  trackingPlans: TrackingPlanService;
  trackingPlanBindings: TrackingPlanBindings;
  quarantine: QuarantineService;
  planFromTraffic: PlanFromTraffic;
  planAlerts: PlanAlertService;
  planViolations: PlanViolationsService;
  functions: FunctionService;
  functionBindings: FunctionBindings;
  functionTests: FunctionTestRun;
}

/** What the Express app needs besides the services. */
export interface HttpDependencies {
  dataSource: DataSource;
  logger: Logger;
  /** INTERNAL_TOKEN_INGESTION and INTERNAL_TOKEN_DELIVERY_<APP TYPE>: each internal caller's own token. */
  internalTokens: InternalTokens;
  /**
   * OPERATOR_API_TOKEN, for the operator app (createOperatorApp) only; absent: its routes answer
   * 404. The public app answers 404 on the operator routes whatever this is.
   */
  operatorToken?: OperatorToken;
  /** Wrong operator tokens per client address (OPERATOR_TOKEN_FAILURES_PER_MINUTE); absent: not limited. */
  operatorTokenFailures?: OperatorTokenFailureLimitOptions;
  /** The per-API-key request limit (API_RATE_LIMIT_*); absent: not limited. */
  apiRateLimit?: ApiRateLimitOptions;
  /** Unknown or revoked API keys per client address (API_KEY_FAILURES_PER_MINUTE); absent: not limited. */
  apiKeyFailures?: ApiKeyFailureLimitOptions;
  /** The process's metrics, shared with its job runner and task worker. */
  metrics: ControlPlaneMetrics;
  /**
   * The live event debugger's Redis (REDIS_URL or REDIS_CLUSTER_NODES, without a key prefix):
   * `redis` for the lists, `connection` for the streams' own connections. Absent: its endpoints answer 503.
   */
  debugger?: {
    redis: RedisClient;
    connection: RedisConnection;
    maxStreamsPerKey?: number;
    keepAliveMs?: number;
    revalidateMs?: number;
  };
}

const OPERATOR_ROUTES = '/api/v1/operator';

/** Whether `path` is an operator route, matched as express routes them: case-insensitively. */
function isOperatorPath(path: string): boolean {
  const lower = path.toLowerCase();
  return lower === OPERATOR_ROUTES || lower.startsWith(`${OPERATOR_ROUTES}/`);
}

/** The control plane's Express app over services composed elsewhere (composition.ts). */
export function createHttpApp(services: ApiServices, deps: HttpDependencies): Express {
  const { dataSource, logger, metrics } = deps;
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
    [MeController, new MeController(dataSource)],
    [DebuggerController, new DebuggerController(services.debugger)],
    [DeadLettersController, new DeadLettersController(services.deadLetters)],
    [RegulationsController, new RegulationsController(services.regulations)],
    [SuppressionsController, new SuppressionsController(services.regulations)],
    [RegulatedSubjectsController, new RegulatedSubjectsController(services.regulations.service)],
    [TrackingPlansController, new TrackingPlansController(services.trackingPlans, services.planFromTraffic)],
    [WriteKeyTrackingPlanController, new WriteKeyTrackingPlanController(services.trackingPlanBindings)],
    [TrackingPlanVersionsController, new TrackingPlanVersionsController(services.trackingPlans)],
    [QuarantineController, new QuarantineController(services.quarantine)],
    [PlanAlertController, new PlanAlertController(services.planAlerts)],
    [PlanViolationsController, new PlanViolationsController(services.planViolations)],
    [FunctionsController, new FunctionsController(services.functions, services.functionTests)],
    [IntegrationFunctionController, new IntegrationFunctionController(services.functionBindings)],
    [WarehouseFunctionController, new WarehouseFunctionController(services.functionBindings)],
    [WriteKeyFunctionController, new WriteKeyFunctionController(services.functionBindings)],
    [
      OperatorWarehousesController,
      new OperatorWarehousesController(services.warehouses, services.placements),
    ],
    [AccountWarehouseController, new AccountWarehouseController(services.placements)],
    [OperatorWarehouseMovesController, new OperatorWarehouseMovesController(services.warehouseMoves)],
    [
      WarehouseResolutionController,
      new WarehouseResolutionController(services.placements, services.warehouses, services.functionBindings),
    ],
  ]);
  app.locals[CONTROLLERS] = controllers;
  const authenticator = new ApiKeyAuthenticator(dataSource);
  app.locals[AUTHENTICATOR] = authenticator;
  app.locals[INTERNAL_TOKENS] = deps.internalTokens;
  // The public listener holds no operator token: even a route that slipped past the gate below
  // answers 404, as on a deployment without the operator API.
  app.locals[OPERATOR_TOKEN] = new OperatorToken(undefined);

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
  // The operator API is served on its own listener (createOperatorApp, OPERATOR_PORT), which no
  // Ingress routes: here its routes do not exist, whatever the token.
  app.use((req, res, next) => {
    if (isOperatorPath(req.path)) notFoundHandler(req, res, next);
    else next();
  });
  // JSON by any JSON media type: Segment's Public API clients send application/vnd.segment.v1+json
  // (docs/privacy.md, "Moving from Segment").
  app.use(express.json({ limit: '1mb', strict: true, type: ['application/json', 'application/*+json'] }));
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
    debugStreamRouter(authenticator, services.debugger, logger, {
      connection: deps.debugger?.connection,
      ...(deps.debugger?.maxStreamsPerKey ? { maxStreamsPerKey: deps.debugger.maxStreamsPerKey } : {}),
      ...(deps.debugger?.keepAliveMs ? { keepAliveMs: deps.debugger.keepAliveMs } : {}),
      ...(deps.debugger?.revalidateMs ? { revalidateMs: deps.debugger.revalidateMs } : {}),
    }),
  );
  // An internal route that names no scope would open to every internal token: refused here.
  checkInternalRoutes(RegisterRoutes);
  RegisterRoutes(app);
  app.use(mcpRouter(authenticator, services.tasks));
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}

/**
 * The operator API (`/api/v1/operator/...`: warehouses and moves) alone, for a listener of its
 * own (OPERATOR_PORT) that no Ingress routes: whoever holds the token decides where every
 * account's data is written, so a leaked token must be worth nothing outside the cluster. Every
 * other path answers 404; wrong tokens are limited per address and logged.
 */
export function createOperatorApp(services: ApiServices, deps: HttpDependencies): Express {
  const { logger, metrics } = deps;
  const operatorToken = deps.operatorToken ?? new OperatorToken(undefined);
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  const controllers: ControllerRegistry = new Map<abstract new (...args: never[]) => unknown, unknown>([
    [
      OperatorWarehousesController,
      new OperatorWarehousesController(services.warehouses, services.placements),
    ],
    [OperatorWarehouseMovesController, new OperatorWarehouseMovesController(services.warehouseMoves)],
    [OperatorRegulationsController, new OperatorRegulationsController(services.regulations.service)],
  ]);
  app.locals[CONTROLLERS] = controllers;
  app.locals[OPERATOR_TOKEN] = operatorToken;
  app.use(metrics.httpMiddleware());
  app.use(requestLogging(logger));
  app.use((req, res, next) => {
    if (isOperatorPath(req.path)) next();
    else notFoundHandler(req, res, next);
  });
  if (deps.operatorTokenFailures)
    app.use(operatorTokenFailureLimit(operatorToken, deps.operatorTokenFailures, logger));
  app.use(express.json({ limit: '1mb', strict: true }));
  RegisterRoutes(app);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}
