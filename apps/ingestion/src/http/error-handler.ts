import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isAppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';

/** The ingestion API's error body (spec 7.1): `{ ok: false, error: <code>, ...details }`. */
export interface IngestionErrorBody {
  ok: false;
  error: string;
  [field: string]: unknown;
}

/** Writes a JSON answer on a bare response, as express's res.json would. */
export function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', Buffer.byteLength(json));
  res.end(json);
}

/** The documented answer for an error: its status, body and Retry-After; 500 otherwise. */
export function writeError(res: ServerResponse, error: unknown, logger: Logger): void {
  if (!isAppError(error)) {
    logger.error('request failed', { error });
    writeJson(res, 500, { ok: false, error: 'server_error' } satisfies IngestionErrorBody);
    return;
  }
  const retryAfter = error.details?.retryAfter;
  if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  writeJson(res, error.status, {
    ok: false,
    error: error.code,
    ...error.details,
  } satisfies IngestionErrorBody);
}

/** One handler for the service's express routes; /collect's own path uses writeError too. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    writeError(res, error, logger);
  };
}

export const notFoundHandler: RequestHandler = (_req, res) => {
  writeJson(res, 404, { ok: false, error: 'not_found' } satisfies IngestionErrorBody);
};
