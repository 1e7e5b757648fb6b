import type { ServerResponse } from 'node:http';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isAppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';

/** The ingestion API's error body (docs/tracking-api.md#errors): `{ ok: false, error: <code>, ...details }`. */
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

/** How a family of routes spells an error body, from the error's code, message and details. */
export type ErrorBody = (code: string, message: string, details: Record<string, unknown>) => object;

/** The ingestion API's own: `{ ok: false, error: <code>, ...details }`. */
export const ingestionErrorBody: ErrorBody = (code, _message, details) =>
  ({ ok: false, error: code, ...details }) satisfies IngestionErrorBody;

/**
 * The documented answer for an error: its status, body and Retry-After; 500 otherwise. `body`
 * spells it for the route family (Segment's routes have their own, segment-endpoint.ts).
 */
export function writeError(
  res: ServerResponse,
  error: unknown,
  logger: Logger,
  body: ErrorBody = ingestionErrorBody,
): void {
  if (!isAppError(error)) {
    logger.error('request failed', { error });
    writeJson(res, 500, body('server_error', 'The request could not be handled', {}));
    return;
  }
  const retryAfter = error.details?.retryAfter;
  if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  writeJson(res, error.status, body(error.code, error.message, error.details ?? {}));
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
