import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import cors from 'cors';
import express, { type Request } from 'express';
import type { ReadinessCheck } from '@pipeline/lifecycle';
import { nameServerSpan } from '@pipeline/telemetry';
import { requestLogging, type Logger } from '@pipeline/logger';
import { simulateRoutes, type SimulateSettings } from './admin/simulate-routes';
import { collectEndpoint, isCollectRequest } from './collect/collect-endpoint';
import type { CollectService } from './collect/collect-service';
import type { HealthReporter } from './health/delivery-health';
import { healthRoutes } from './health/health-routes';
import { errorHandler, notFoundHandler } from './http/error-handler';
import type { SdkFile } from './sdk/sdk-file';
import { sdkRoutes } from './sdk/sdk-routes';
import { isSegmentRequest, segmentEndpoint } from './segment/segment-endpoint';
import { segmentSettingsRoutes } from './segment/segment-settings';

export interface AppDependencies {
  logger: Logger;
  collect: CollectService;
  health: HealthReporter;
  sdk: SdkFile | null;
  simulate: SimulateSettings;
  clientAddress: (req: IncomingMessage) => string | null;
  /** What GET /readyz checks (hosted mode: Kafka); none: always ready. */
  readiness?: Record<string, ReadinessCheck>;
  /** PUBLIC_TRACKING_URL: the origin the Segment settings document names; unset: where the request arrived. */
  publicTrackingUrl?: string;
}

/**
 * Browsers on any site may send: the write key, not the origin, is the credential. Any
 * request header is allowed (the preflight's own list is echoed): Segment's browser library
 * adds X-Retry-Count, and other libraries their own.
 */
const anySite = cors({
  origin: '*',
  methods: ['GET', 'POST', 'OPTIONS'],
  exposedHeaders: ['Retry-After', 'X-Request-Id'],
  maxAge: 86400,
});

/**
 * The service's request listener: POST /collect and Segment's tracking routes on their own
 * fast path, the rest in express.
 */
export function createApp(deps: AppDependencies): RequestListener {
  const { metrics } = deps.collect;
  // The access log: 4xx and 5xx at info, 2xx and 3xx at debug only (docs/operations.md, "Logs").
  const logRequest = requestLogging(deps.logger, { successLevel: 'debug' });
  const app = express();
  app.disable('x-powered-by');
  // Answers to POSTs are never revalidated; hashing each one for an ETag is wasted work.
  app.set('etag', false);
  app.use(logRequest);
  app.use((req, res, next) => {
    // The route template is known once express has routed the request.
    res.once('finish', () => metrics.answered(expressRoute(req), res.statusCode));
    next();
  });
  app.use(anySite);
  app.use(healthRoutes(deps.health, deps.readiness ?? {}, deps.logger));
  app.use(sdkRoutes(deps.sdk));
  app.use(segmentSettingsRoutes(deps.collect, deps.clientAddress, deps.publicTrackingUrl));
  app.use(simulateRoutes(deps.simulate, deps.collect, deps.clientAddress));
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));

  const collect = collectEndpoint(deps.collect, deps.clientAddress, deps.logger);
  const segment = segmentEndpoint(deps.collect, deps.clientAddress, deps.logger);
  const counted = (res: ServerResponse, route: string) =>
    res.once('finish', () => metrics.answered(route, res.statusCode));
  return (req, res) => {
    if (isCollectRequest(req)) {
      counted(res, '/collect');
      nameServerSpan('POST', '/collect');
      logRequest(req, res, () => collect(req, res));
    } else if (isSegmentRequest(req)) {
      // One of Segment's route names (isSegmentRequest admits no other): a bounded label.
      const url = req.url ?? '';
      const end = url.indexOf('?');
      const route = (end === -1 ? url : url.slice(0, end)).replace(/\/$/, '');
      counted(res, route);
      nameServerSpan(req.method ?? 'POST', route);
      logRequest(req, res, () => segment(req, res));
    } else app(req, res);
  };
}

/** An express request's route template: `preflight` for CORS preflights, `unmatched` for 404s. */
function expressRoute(req: Request): string {
  const route = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof route === 'string') return req.baseUrl + route;
  return req.method === 'OPTIONS' ? 'preflight' : 'unmatched';
}
