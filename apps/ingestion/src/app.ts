import express, { type Express } from 'express';
import { requestLogging, type Logger } from '@pipeline/logger';
import { healthRoutes, type OutboxHealth } from './health/health-routes';
import { errorHandler, notFoundHandler } from './http/error-handler';

export interface AppDependencies {
  logger: Logger;
  outbox: OutboxHealth;
}

export function createApp({ logger, outbox }: AppDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestLogging(logger));
  app.use(healthRoutes(outbox));
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}
