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

/** Why stored credentials do not open: their key is not configured, or the key of that name is another. */
export type UnreadableReason = 'key_missing' | 'key_differs';

/**
 * Stored credentials (a warehouse's password, an app's credentials) that the configured
 * CREDENTIALS_ENCRYPTION_KEYS cannot open: the server's configuration, not the request, is at
 * fault, so 503. The process says so once, with the key and the fix, when it first meets the
 * key (`reported`: the error handler does not log each request again).
 */
export const credentialsUnreadable = (keyId: string, reason: UnreadableReason) =>
  new AppError(
    503,
    'credentials_unreadable',
    reason === 'key_missing'
      ? 'The stored credentials cannot be opened: the encryption key that sealed them is missing from this service; an operator must restore it, or the credentials must be entered again'
      : "The stored credentials cannot be opened: this service's encryption key of that name is not the one that sealed them (it was replaced, or the stored value altered); an operator must restore the original key, or the credentials must be entered again",
    // The key id is the operator's: logged and in the warehouse's status, never in an answer.
    { keyId, reason, reported: true },
  );

export const isCredentialsUnreadable = (error: unknown): error is AppError =>
  isAppError(error) && error.code === 'credentials_unreadable';

/** An error the process has already told its operator about: not logged again per request. */
export const isAlreadyReported = (error: unknown): boolean =>
  isAppError(error) && error.details?.reported === true;
