import { z } from 'zod';
import { envInt } from '@pipeline/config';

export const lifecycleConfigSchema = z.object({
  SHUTDOWN_TIMEOUT_MS: envInt({ min: 1000, max: 600_000, default: 25_000 }).describe(
    "Bound for the whole graceful shutdown (stop accepting, drain requests, flush Kafka, close pools); past it the process exits with code 1. Keep it below the pod's termination grace period.",
  ),
});
