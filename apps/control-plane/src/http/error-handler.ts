import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { ValidateError } from '@tsoa/runtime';
import { isAppError } from '@pipeline/errors';
import { currentRequestId, type Logger } from '@pipeline/logger';
import { isAlreadyReported } from './api-errors';
import { problem, type Problem, type ProblemFieldError, type ProblemLimit } from './problem';

/**
 * tsoa names body fields `body.x` but array items without the prefix (`role.$0`) and query
 * parameters by bare name; normalize to `body.role[0]` / `query.limit`.
 */
function fieldErrors(error: ValidateError, req: Request): ProblemFieldError[] {
  return Object.entries(error.fields).map(([raw, field]) => {
    const path = raw.replace(/\.\$(\d+)/g, '[$1]');
    const head = path.split(/[.[]/)[0] ?? '';
    const located = /^(body|query|path)$/.test(head)
      ? path
      : Object.hasOwn(req.query ?? {}, head)
        ? `query.${path}`
        : `body${prefixInBody(req.body, head)}.${path}`;
    return { path: located, message: field.message };
  });
}

/**
 * The values prefixInBody looks at, at most, per field error: the body is the client's, and a
 * 2 MB body of small objects holds hundreds of thousands.
 */
export const PREFIX_SEARCH_BUDGET = 10_000;

/**
 * Where, shallowest first, the body has a property `key` (tsoa drops the parents of array
 * items); '' when none is found within `budget` values. `effort` counts the values it looked
 * at and the ones it queued (never more than `budget` waiting).
 */
export function prefixInBody(
  body: unknown,
  key: string,
  budget = PREFIX_SEARCH_BUDGET,
  effort = { visited: 0, queued: 0 },
): string {
  const queue: [unknown, string][] = [[body, '']];
  effort.queued = 1;
  // An index, not shift(): shifting a long queue moves all of it each time.
  for (let entry = queue[0], next = 0; entry && effort.visited < budget; entry = queue[(next += 1)]) {
    effort.visited += 1;
    const [node, prefix] = entry;
    if (node === null || typeof node !== 'object') continue;
    if (!Array.isArray(node) && Object.hasOwn(node, key)) return prefix;
    // for...in stops when told; Object.entries would first copy a 100,000-item array whole.
    for (const k in node) {
      if (queue.length - next > budget) break;
      queue.push([
        (node as Record<string, unknown>)[k],
        Array.isArray(node) ? `${prefix}[${k}]` : `${prefix}.${k}`,
      ]);
      effort.queued = queue.length;
    }
  }
  return '';
}

function toProblem(error: unknown, req: Request): Problem {
  if (isAppError(error)) {
    const errors = error.details?.errors as ProblemFieldError[] | undefined;
    const limit = error.details?.limit as ProblemLimit | undefined;
    return problem(error.status, error.code, error.message, {
      ...(errors ? { errors } : {}),
      ...(limit ? { limit } : {}),
    });
  }
  if (error instanceof ValidateError) {
    return problem(400, 'validation_failed', 'The request is not valid', { errors: fieldErrors(error, req) });
  }
  const { type } = (error ?? {}) as { type?: string };
  // body-parser's errors carry a `type`.
  if (type === 'entity.parse.failed')
    return problem(400, 'invalid_json', 'The request body is not valid JSON');
  if (type === 'entity.too.large') return problem(413, 'payload_too_large', 'The request body is too large');
  if (type === 'encoding.unsupported' || type === 'charset.unsupported') {
    return problem(415, 'unsupported_encoding', 'The request body encoding is not supported');
  }
  return problem(500, 'internal_error', 'An internal error occurred');
}

function causeOf(error: unknown): string | undefined {
  const { cause } = (error ?? {}) as { cause?: unknown };
  if (cause === undefined) return undefined;
  return cause instanceof Error ? cause.message : String(cause);
}

/** Renders every error as problem details; never a stack trace. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, next) => {
    if (res.headersSent) {
      next(error);
      return;
    }
    const body = toProblem(error, req);
    const requestId = currentRequestId();
    if (requestId) body.requestId = requestId;
    // An AppError's cause (a driver's message naming a host or user) reaches the logs only.
    // What the process already told its operator (credentials its keys cannot open) is not
    // logged again for every request that meets it.
    if (body.status >= 500 && !isAlreadyReported(error))
      logger.error('request failed', { error, cause: causeOf(error) });
    const retryAfter = isAppError(error) ? error.details?.retryAfterSeconds : undefined;
    if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
    res.status(body.status).type('application/problem+json').json(body);
  };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  const body = problem(404, 'not_found', `No route for ${req.method} ${req.path}`);
  const requestId = currentRequestId();
  if (requestId) body.requestId = requestId;
  res.status(404).type('application/problem+json').json(body);
};
