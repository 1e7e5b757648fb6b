import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isAppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';

/** The ingestion API's error body (spec 7.1): `{ ok: false, error: <code>, ...details }`. */
export interface IngestionErrorBody {
  ok: false;
  error: string;
  [field: string]: unknown;
}

function toBody(error: unknown): { status: number; body: IngestionErrorBody } {
  if (isAppError(error))
    return { status: error.status, body: { ok: false, error: error.code, ...error.details } };
  const { type } = (error ?? {}) as { type?: string };
  if (type === 'entity.parse.failed') return { status: 400, body: { ok: false, error: 'invalid_payload' } };
  if (type === 'entity.too.large') return { status: 413, body: { ok: false, error: 'payload_too_large' } };
  return { status: 500, body: { ok: false, error: 'server_error' } };
}

export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const { status, body } = toBody(error);
    if (status >= 500) logger.error('request failed', { error });
    res.status(status).json(body);
  };
}

export const notFoundHandler: RequestHandler = (_req, res) => {
  res.status(404).json({ ok: false, error: 'not_found' } satisfies IngestionErrorBody);
};
