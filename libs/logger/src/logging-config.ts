import { z } from 'zod';
import { envEnum } from '@pipeline/config';

export const loggingConfigSchema = z.object({
  LOG_LEVEL: envEnum(['error', 'warn', 'info', 'debug'], 'info'),
  /** `json` for machines (the default); `pretty` for a developer's terminal. */
  LOG_FORMAT: envEnum(['json', 'pretty'], 'json'),
});
