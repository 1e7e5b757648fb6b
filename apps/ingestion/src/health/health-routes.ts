import { Router } from 'express';
import { livenessAnswer, readiness, type ReadinessCheck } from '@pipeline/lifecycle';
import type { Logger } from '@pipeline/logger';
import { publicHealth, type HealthReporter } from './delivery-health';

/**
 * GET /health for load balancers: 503 when the outbox cannot be read (docs/tracking-api.md#health), statuses
 * only (the consumer groups and their lag are on the metrics port's /health). The probes
 * (docs/operations.md, "Probes"): GET /livez, 200 while the process answers; GET /readyz, 200
 * when every check answers (hosted mode: the Kafka brokers of the outbox), 503 naming those
 * that do not.
 */
export function healthRoutes(
  reporter: HealthReporter,
  checks: Record<string, ReadinessCheck>,
  logger: Logger,
): Router {
  const router = Router();
  router.get('/health', async (_req, res, next) => {
    try {
      const { status, body } = publicHealth(await reporter.report());
      res.status(status).json(body);
    } catch (error) {
      next(error);
    }
  });
  router.get('/livez', (_req, res) => {
    res.status(livenessAnswer.status).json(livenessAnswer.body);
  });
  router.get('/readyz', async (_req, res, next) => {
    try {
      const { status, body } = await readiness(checks, {
        onFailure: (check, error) =>
          logger.warn('not ready', { check, error: error instanceof Error ? error.message : String(error) }),
      });
      res.status(status).json(body);
    } catch (error) {
      next(error);
    }
  });
  return router;
}
