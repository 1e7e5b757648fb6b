import type { IncomingMessage, ServerResponse } from 'node:http';
import { isAppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import { requestFacts } from '../collect/collect-endpoint';
import type { CollectService } from '../collect/collect-service';
import { writeJson } from '../http/error-handler';
import { readRequestBody } from '../http/request-body';
import { parseSegmentBody, SEGMENT_MAX_BODY_BYTES, segmentRouteOf } from './segment-request';

/**
 * Segment's answer to an error: the status its libraries act on (they retry 429 and 5xx and
 * drop other 4xx), `Retry-After` when there is one, and `{ success: false, code, message }`
 * with our details (which events were refused, and why).
 */
function writeSegmentError(res: ServerResponse, error: unknown, logger: Logger): void {
  if (!isAppError(error)) {
    logger.error('request failed', { error });
    writeJson(res, 500, {
      success: false,
      code: 'server_error',
      message: 'The request could not be handled',
    });
    return;
  }
  const retryAfter = error.details?.retryAfter;
  if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  writeJson(res, error.status, {
    success: false,
    code: error.code,
    message: error.message,
    ...error.details,
  });
}

/** True for the requests segmentEndpoint answers. */
export const isSegmentRequest = (req: IncomingMessage) => segmentRouteOf(req.method, req.url) !== undefined;

/**
 * Segment's HTTP Tracking API (`/v1/batch`, `/v1/track`, ... and the browser library's `/v1/t`,
 * `/v1/b`, ...) on /collect's pipeline: the same auth, origins, limits, dedupe and outbox.
 * `200 {"success": true}` is sent only once the events are committed, as /collect's 202;
 * refused events of a batch are listed by index beside it.
 */
export function segmentEndpoint(
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    res.setHeader('Access-Control-Allow-Origin', '*');
    res.setHeader('Access-Control-Expose-Headers', 'Retry-After,X-Request-Id');
    const route = segmentRouteOf(req.method, req.url);
    if (!route) return;
    const facts = requestFacts(req, clientAddress);
    readRequestBody(req, SEGMENT_MAX_BODY_BYTES)
      .then((body) => service.collect(parseSegmentBody(body, route, facts.receivedAt), facts))
      .then(
        (result) => {
          const errors = result.body.errors;
          writeJson(res, 200, {
            success: true,
            ...(Array.isArray(errors) && errors.length > 0 ? { errors } : {}),
          });
        },
        (error: unknown) => writeSegmentError(res, error, logger),
      )
      .catch((error: unknown) => {
        logger.error('could not answer a Segment API request', { error });
        res.destroy();
      });
  };
}
