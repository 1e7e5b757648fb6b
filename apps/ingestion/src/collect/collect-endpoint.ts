import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@pipeline/logger';
import { writeError, writeJson } from '../http/error-handler';
import { readRequestBody } from '../http/request-body';
import { parseCollectBody } from './collect-request';
import type { CollectService, RequestFacts } from './collect-service';

export function requestFacts(
  req: IncomingMessage,
  clientAddress: (req: IncomingMessage) => string | null,
): RequestFacts {
  return {
    headers: req.headers,
    ip: clientAddress(req),
    userAgent: req.headers['user-agent'] ?? null,
    origin: req.headers.origin,
    receivedAt: new Date(),
  };
}

/** True for the requests collectEndpoint answers: POST /collect, with or without a query. */
export function isCollectRequest(req: IncomingMessage): boolean {
  if (req.method !== 'POST' || !req.url?.startsWith('/collect')) return false;
  const rest = req.url.slice('/collect'.length);
  return rest === '' || rest === '/' || rest.startsWith('?');
}

/**
 * POST /collect on node:http directly rather than through express: the route is the service's
 * hot path, and express's per-request work (its router, request and response decoration) cost
 * more CPU than validating the 20 events of a batch (tools/bench/collect-load.js). CORS
 * preflights, the other routes and the 404s stay in express.
 */
export function collectEndpoint(
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // What the cors middleware sets on a simple cross-site request, for any site.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', 'Retry-After,X-Request-Id');
    const facts = requestFacts(req, clientAddress);
    readRequestBody(req)
      .then((body) => service.collect(parseCollectBody(body), facts))
      .then(
        (result) => writeJson(res, result.status, result.body),
        (error: unknown) => writeError(res, error, logger),
      )
      .catch((error: unknown) => {
        logger.error('could not answer /collect', { error });
        res.destroy();
      });
  };
}
