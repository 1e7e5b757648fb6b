import type { IncomingMessage, RequestListener } from 'node:http';
import cors from 'cors';
import express from 'express';
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
  const app = express();
  app.disable('x-powered-by');
  // Answers to POSTs are never revalidated; hashing each one for an ETag is wasted work.
  app.set('etag', false);
  app.use(requestLogging(deps.logger));
  app.use(anySite);
  app.use(healthRoutes(deps.health));
  app.use(sdkRoutes(deps.sdk));
  app.use(segmentSettingsRoutes(deps.collect, deps.clientAddress));
  app.use(simulateRoutes(deps.simulate, deps.collect, deps.clientAddress));
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger));

  const logRequest = requestLogging(deps.logger);
  const collect = collectEndpoint(deps.collect, deps.clientAddress, deps.logger);
  const segment = segmentEndpoint(deps.collect, deps.clientAddress, deps.logger);
  return (req, res) => {
    if (isCollectRequest(req)) logRequest(req, res, () => collect(req, res));
    else if (isSegmentRequest(req)) logRequest(req, res, () => segment(req, res));
    else app(req, res);
  };
}
