import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from './logger';
import { requestIdFrom, runWithRequestId } from './request-context';

type Next = (error?: unknown) => void;

/**
 * Connect-style middleware: gives each request an id (the caller's X-Request-Id when
 * acceptable), echoes it in the response, runs the rest of the chain inside its context so
 * every log line carries it, and logs one line when the response is finished.
 */
export function requestLogging(logger: Logger) {
  return (req: IncomingMessage, res: ServerResponse, next: Next): void => {
    const id = requestIdFrom(req.headers['x-request-id']);
    const started = process.hrtime.bigint();
    res.setHeader('X-Request-Id', id);
    res.on('finish', () => {
      runWithRequestId(id, () => {
        // The path only: query strings may carry keys.
        const path = (req.url ?? '').split('?')[0];
        logger.info('request completed', {
          method: req.method,
          path,
          status: res.statusCode,
          durationMs: Number(process.hrtime.bigint() - started) / 1e6,
        });
      });
    });
    runWithRequestId(id, () => next());
  };
}
