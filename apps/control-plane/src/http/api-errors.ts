import { AppError } from '@pipeline/errors';
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
