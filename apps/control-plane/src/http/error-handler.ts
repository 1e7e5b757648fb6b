import type { ErrorRequestHandler, RequestHandler } from 'express';
import { ValidateError } from '@tsoa/runtime';
import { isAppError } from '@pipeline/errors';
import { currentRequestId, type Logger } from '@pipeline/logger';
import { problem, type Problem, type ProblemFieldError } from './problem';

function fieldErrors(error: ValidateError): ProblemFieldError[] {
  return Object.entries(error.fields).map(([path, field]) => ({ path, message: field.message }));
}

function toProblem(error: unknown): Problem {
  if (isAppError(error)) return problem(error.status, error.code, error.message);
  if (error instanceof ValidateError) {
    return problem(400, 'validation_failed', 'The request is not valid', { errors: fieldErrors(error) });
  }
  const { type, status } = (error ?? {}) as { type?: string; status?: number };
  // body-parser's errors carry a `type`.
  if (type === 'entity.parse.failed')
    return problem(400, 'invalid_json', 'The request body is not valid JSON');
  if (type === 'entity.too.large') return problem(413, 'payload_too_large', 'The request body is too large');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return problem(415, 'unsupported_encoding', 'The request body encoding is not supported');
  }
  if (status === 401) return problem(401, 'unauthenticated', 'Missing or invalid API key');
  return problem(500, 'internal_error', 'An internal error occurred');
}

/** Renders every error as problem details; never a stack trace. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, _req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const body = toProblem(error);
    const requestId = currentRequestId();
    if (requestId) body.requestId = requestId;
    if (body.status >= 500) logger.error('request failed', { error });
    res.status(body.status).type('application/problem+json').json(body);
  };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  const body = problem(404, 'not_found', `No route for ${req.method} ${req.path}`);
  const requestId = currentRequestId();
  if (requestId) body.requestId = requestId;
  res.status(404).type('application/problem+json').json(body);
};
