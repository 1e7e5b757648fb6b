import express, { Router, type Request, type RequestHandler } from 'express';
import type { IncomingMessage } from 'node:http';
import { parseCollectBody } from './collect-request';
import type { CollectService, RequestFacts } from './collect-service';

export const MAX_BODY_BYTES = 2 * 1024 * 1024;

/** Every content type is read as JSON: sendBeacon posts text/plain without a preflight. */
export const rawBody: RequestHandler = express.raw({ type: () => true, limit: MAX_BODY_BYTES });

export function requestFacts(
  req: Request,
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

export function collectRoutes(
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
): Router {
  const router = Router();
  router.post('/collect', rawBody, async (req, res, next) => {
    try {
      const facts = requestFacts(req, clientAddress);
      const body = Buffer.isBuffer(req.body) ? req.body : undefined;
      const result = await service.collect(parseCollectBody(body), facts);
      res.status(result.status).json(result.body);
    } catch (error) {
      next(error);
    }
  });
  return router;
}
