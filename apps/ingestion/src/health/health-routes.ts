import { Router } from 'express';
import type { HealthReporter } from './delivery-health';

/** GET /health for load balancers: 503 when the outbox cannot be read (spec 4.7). */
export function healthRoutes(reporter: HealthReporter): Router {
  const router = Router();
  router.get('/health', async (_req, res, next) => {
    try {
      const { status, body } = await reporter.report();
      res.status(status).json(body);
    } catch (error) {
      next(error);
    }
  });
  return router;
}
