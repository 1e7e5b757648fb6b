import { z } from 'zod';
import { envInt } from '@pipeline/config';

export const lifecycleConfigSchema = z.object({
  /** Bound for the whole shutdown; keep it below the pod's terminationGracePeriodSeconds. */
  SHUTDOWN_TIMEOUT_MS: envInt({ min: 1000, max: 600_000, default: 25_000 }),
});
