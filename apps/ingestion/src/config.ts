import { z } from 'zod';
import { envPort, envString } from '@pipeline/config';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';

export const ingestionConfigSchema = z.object({
  HOST: envString('0.0.0.0'),
  PORT: envPort(3001),
  ...loggingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...kafkaConfigSchema.shape,
});

export type IngestionConfig = z.infer<typeof ingestionConfigSchema>;
