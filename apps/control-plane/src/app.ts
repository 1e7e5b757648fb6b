import 'reflect-metadata';
import express, { type Express } from 'express';
import type { DataSource } from 'typeorm';
import { requestLogging, type Logger } from '@pipeline/logger';
import { HealthController } from './health/health.controller';
import { CONTROLLERS, type ControllerRegistry } from './http/controller-registry';
import { errorHandler, notFoundHandler } from './http/error-handler';
import { RegisterRoutes } from './generated/routes';
import openApiDocument from './generated/openapi.json';

export interface AppDependencies {
  dataSource: DataSource;
  logger: Logger;
}

export function createApp({ dataSource, logger }: AppDependencies): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', false);
  const controllers: ControllerRegistry = new Map([[HealthController, new HealthController(dataSource)]]);
  app.locals[CONTROLLERS] = controllers;

  app.use(requestLogging(logger));
  app.use(express.json({ limit: '1mb', strict: true }));
  app.get('/api/v1/openapi.json', (_req, res) => {
    res.json(openApiDocument);
  });
  RegisterRoutes(app);
  app.use(notFoundHandler);
  app.use(errorHandler(logger));
  return app;
}
