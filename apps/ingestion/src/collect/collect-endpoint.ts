import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import { INVALID_EVENT } from '../metrics/ingestion-metrics';
import { writeError, writeJson, type ErrorBody } from '../http/error-handler';
import { readRequestBody } from '../http/request-body';
import { findWriteKey, parseCollectBody, type CollectRequest } from './collect-request';
import type { CollectResponse, CollectService, RequestFacts } from './collect-service';

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
    startedAt: performance.now(),
  };
}

/** True for the requests collectEndpoint answers: POST /collect, with or without a query. */
export function isCollectRequest(req: IncomingMessage): boolean {
  if (req.method !== 'POST' || !req.url?.startsWith('/collect')) return false;
  const rest = req.url.slice('/collect'.length);
  return rest === '' || rest === '/' || rest.startsWith('?');
}

/** What differs between the routes that run on the fast path: how a body is read and answered. */
export interface PipelineRoute {
  /** Names the route in the log line of a request that could not be answered at all. */
  name: string;
  /** The decoded body's limit; the ingestion API's 2 MB by default. */
  bodyLimit?: number;
  parse(body: Buffer, req: IncomingMessage, facts: RequestFacts): CollectRequest;
  answer(result: CollectResponse): CollectResponse;
  errorBody?: ErrorBody;
}

/**
 * A route of the tracking pipeline on node:http directly rather than through express: these
 * are the service's hot path, and express's per-request work (its router, request and response
 * decoration) cost more CPU than validating the 20 events of a batch
 * (tools/bench/collect-load.js). CORS preflights, the other routes and the 404s stay in express.
 */
export function pipelineEndpoint(
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
  logger: Logger,
  route: PipelineRoute,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    // What the cors middleware sets on a simple cross-site request, for any site.
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', 'Retry-After,X-Request-Id');
    const facts = requestFacts(req, clientAddress);
    const { metrics } = service;
    // The request's events once its body was read: a request refused before counts as one.
    let events = 1;
    let read = false;
    let keyRefused = false;
    readRequestBody(req, route.bodyLimit)
      .then(async (body) => {
        // A key in a header is checked before the body is parsed: an unknown one costs no
        // parse (a text with an escaped key takes the slower scanner, parseJsonText). A key
        // that can only be in the body is checked once the body is read.
        const headerKey = findWriteKey(req.headers, undefined);
        if (headerKey)
          facts.headerTenant = await service
            .authenticate(headerKey, facts, { countAuthAttempts: true })
            .catch((error: unknown) => {
              keyRefused = true;
              throw error;
            });
        const request = route.parse(body, req, facts);
        events = request.events.length;
        read = true;
        return service.collect(request, facts);
      })
      .then(
        (result) => {
          if (result.events) {
            metrics.eventsAccepted(result.events.accepted);
            metrics.eventsRejected(INVALID_EVENT, result.events.invalid);
          }
          const { status, body } = route.answer(result);
          writeJson(res, status, body);
        },
        (error: unknown) => {
          metrics.eventsRejected(isAppError(error) ? error.code : 'server_error', events);
          writeError(res, error, logger, route.errorBody);
          // After the answer: its write key may have to be looked up (not again once refused).
          if (!read && !keyRefused) service.recordUnreadRequest(facts, error);
        },
      )
      .catch((error: unknown) => {
        logger.error(`could not answer ${route.name}`, { error });
        res.destroy();
      });
  };
}

/** POST /collect: the spec's contract and answers. */
export const collectEndpoint = (
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
  logger: Logger,
) =>
  pipelineEndpoint(service, clientAddress, logger, {
    name: '/collect',
    parse: (body) => parseCollectBody(body),
    answer: (result) => result,
  });
