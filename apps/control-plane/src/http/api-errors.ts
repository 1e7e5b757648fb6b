import { AppError, isAppError } from '@pipeline/errors';
import type { ProblemFieldError } from './problem';

// The management API's errors, each with its documented status and stable code (README,
// "Errors"). Services throw these; http/error-handler.ts renders them as problem details.

export const badRequest = (code: string, detail: string, errors?: ProblemFieldError[]) =>
  new AppError(400, code, detail, errors ? { errors } : undefined);

export const invalidField = (path: string, message: string) =>
  badRequest('validation_failed', 'The request is not valid', [{ path, message }]);

export const unauthenticated = (code: 'unauthenticated' | 'invalid_api_key', detail: string) =>
  new AppError(401, code, detail);

export const forbidden = (code: string, detail: string) => new AppError(403, code, detail);

export const notFound = (resource: string, id: string) =>
  new AppError(404, 'not_found', `No ${resource} with id ${id}`);

export const conflict = (code: string, detail: string) => new AppError(409, code, detail);

export const unprocessable = (code: string, detail: string, errors?: ProblemFieldError[]) =>
  new AppError(422, code, detail, errors ? { errors } : undefined);

export const rateLimited = (detail: string) => new AppError(429, 'rate_limited', detail);

/** Seconds a client waits before asking again after a 503 `warehouse_unavailable`. */
export const WAREHOUSE_RETRY_AFTER_SECONDS = 30;

/**
 * The warehouse database is missing or cannot be reached (connection refused, unknown
 * database, failed authentication). The message names neither host, database nor user: those
 * stay in `cause`, for the logs.
 */
export const warehouseUnavailable = (cause?: unknown) => {
  const error = new AppError(
    503,
    'warehouse_unavailable',
    'The warehouse cannot be reached at the moment; try again later',
    { retryAfterSeconds: WAREHOUSE_RETRY_AFTER_SECONDS },
  );
  if (cause !== undefined) error.cause = cause;
  return error;
};

export const isWarehouseUnavailable = (error: unknown): error is AppError =>
  isAppError(error) && error.code === 'warehouse_unavailable';
