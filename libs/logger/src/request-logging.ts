import type { IncomingMessage, ServerResponse } from 'node:http';
import { context } from '@opentelemetry/api';
import type { Logger, LogLevel } from './logger';
import { requestIdFrom, runWithRequestId } from './request-context';

type Next = (error?: unknown) => void;

export interface RequestLoggingOptions {
  /**
   * The level of the line of a request answered below 400 (`info` unless told). A service whose
   * hot path answers thousands of 2xx a second logs them at `debug`: its 4xx and 5xx are still
   * logged at `info`.
   */
  successLevel?: LogLevel;
}

/**
 * Connect-style middleware: gives each request an id (the caller's X-Request-Id when
 * acceptable), echoes it in the response, runs the rest of the chain inside its context so
 * every log line carries it, and logs one line when the response is finished. A line below the
 * logger's level costs nothing (winston would format it before dropping it).
 */
export function requestLogging(logger: Logger, options: RequestLoggingOptions = {}) {
  const successLevel = options.successLevel ?? 'info';
  return (req: IncomingMessage, res: ServerResponse, next: Next): void => {
    const id = requestIdFrom(req.headers['x-request-id']);
    const started = process.hrtime.bigint();
    res.setHeader('X-Request-Id', id);
    // The request's trace context (its server span, with tracing on) for the line at the finish.
    const traced = context.active();
    res.on('finish', () => {
      const level = res.statusCode < 400 ? successLevel : 'info';
      if (!logger.isLevelEnabled(level)) return;
      context.with(traced, () =>
        runWithRequestId(id, () => {
          // The path only: query strings may carry keys.
          const path = (req.url ?? '').split('?')[0];
          logger.log(level, 'request completed', {
            method: req.method,
            path,
            status: res.statusCode,
            durationMs: Number(process.hrtime.bigint() - started) / 1e6,
          });
        }),
      );
    });
    runWithRequestId(id, () => next());
  };
}
