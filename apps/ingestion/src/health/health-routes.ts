import { Router } from 'express';

export interface OutboxHealth {
  reachable(): Promise<boolean>;
}

/** GET /health for load balancers: 503 when the outbox (Kafka) cannot be reached. */
export function healthRoutes(outbox: OutboxHealth): Router {
  const router = Router();
  router.get('/health', async (_req, res, next) => {
    try {
      const up = await outbox.reachable();
      res.status(up ? 200 : 503).json({ ok: up, outbox: up ? 'up' : 'down' });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
