import type { IncomingMessage } from 'node:http';
import type { Logger } from '@pipeline/logger';
import { pipelineEndpoint } from '../collect/collect-endpoint';
import type { CollectService } from '../collect/collect-service';
import type { ErrorBody } from '../http/error-handler';
import { parseSegmentBody, SEGMENT_MAX_BODY_BYTES, segmentRouteOf } from './segment-request';

/**
 * Segment's error body: `{ success: false, code, message }` with our details (which events were
 * refused, and why), under the status its libraries act on (they retry 429 and 5xx, with
 * Retry-After, and drop other 4xx).
 */
const segmentErrorBody: ErrorBody = (code, message, details) => ({
  success: false,
  code,
  message,
  ...details,
});

/** True for the requests segmentEndpoint answers. */
export const isSegmentRequest = (req: IncomingMessage) => segmentRouteOf(req.method, req.url) !== undefined;

/**
 * Segment's HTTP Tracking API (`/v1/batch`, `/v1/track`, ... and the browser library's `/v1/t`,
 * `/v1/b`, ...) on /collect's pipeline: the same auth, origins, limits, dedupe and outbox.
 * `200 {"success": true}` is sent only once the events are committed, as /collect's 202;
 * refused events of a batch are listed by index beside it.
 */
export const segmentEndpoint = (
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
  logger: Logger,
) =>
  pipelineEndpoint(service, clientAddress, logger, {
    name: 'a Segment API request',
    bodyLimit: SEGMENT_MAX_BODY_BYTES,
    parse: (body, req, facts) => {
      const route = segmentRouteOf(req.method, req.url);
      // app.ts sends only the requests isSegmentRequest admits here.
      if (!route) throw new Error(`not a Segment API route: ${req.method} ${req.url}`);
      return parseSegmentBody(body, route, facts.receivedAt);
    },
    answer: ({ body }) => {
      const errors = body.errors;
      return {
        status: 200,
        body: { success: true, ...(Array.isArray(errors) && errors.length > 0 ? { errors } : {}) },
      };
    },
    errorBody: segmentErrorBody,
  });
