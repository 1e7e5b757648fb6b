import type { ErrorRequestHandler, RequestHandler } from 'express';
import { isAppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import { ingestionErrors } from '../collect/ingestion-errors';
import { MAX_BODY_BYTES } from '../collect/collect-routes';

/** The ingestion API's error body (spec 7.1): `{ ok: false, error: <code>, ...details }`. */
export interface IngestionErrorBody {
  ok: false;
  error: string;
  [field: string]: unknown;
}

function toAppError(error: unknown) {
  if (isAppError(error)) return error;
  const { type } = (error ?? {}) as { type?: string };
  // body-parser's errors carry a `type`.
  if (type === 'entity.too.large') return ingestionErrors.payloadTooLarge(MAX_BODY_BYTES);
  if (
    type === 'request.aborted' ||
    type === 'request.size.invalid' ||
    type === 'encoding.unsupported' ||
    type === 'charset.unsupported'
  ) {
    return ingestionErrors.invalidPayload('the body could not be read');
  }
  return undefined;
}

/** One handler for the service: documented errors with their fields and Retry-After; 500 otherwise. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const known = toAppError(error);
    if (!known) {
      logger.error('request failed', { error });
      res.status(500).json({ ok: false, error: 'server_error' } satisfies IngestionErrorBody);
      return;
    }
    const retryAfter = known.details?.retryAfter;
    if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
    res
      .status(known.status)
      .json({ ok: false, error: known.code, ...known.details } satisfies IngestionErrorBody);
  };
}

export const notFoundHandler: RequestHandler = (_req, res) => {
  res.status(404).json({ ok: false, error: 'not_found' } satisfies IngestionErrorBody);
};
