import { z } from 'zod';
import { envPort, envString } from '@pipeline/config';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { postgresConfigSchema } from '@pipeline/postgres';

export const controlPlaneConfigSchema = z.object({
  HOST: envString('0.0.0.0'),
  PORT: envPort(3000),
  ...loggingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...postgresConfigSchema.shape,
});

export type ControlPlaneConfig = z.infer<typeof controlPlaneConfigSchema>;
