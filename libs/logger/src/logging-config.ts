import { z } from 'zod';
import { envEnum } from '@pipeline/config';

export const loggingConfigSchema = z.object({
  LOG_LEVEL: envEnum(['error', 'warn', 'info', 'debug'], 'info').describe('The least severe level logged.'),
  LOG_FORMAT: envEnum(['json', 'pretty'], 'json').describe(
    '`json`: one object per line, with `requestId` inside a request (for machines); `pretty`: for a terminal.',
  ),
});
