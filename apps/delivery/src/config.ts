import { z } from 'zod';
import { envUrl } from '@pipeline/config';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';

export const deliveryConfigSchema = z.object({
  /** The PostgreSQL warehouse of `--destination warehouse` (created when missing). */
  WAREHOUSE_URL: envUrl(['postgres', 'postgresql'], 'postgres://postgres@127.0.0.1:5432/warehouse'),
  ...loggingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...kafkaConfigSchema.shape,
});

export type DeliveryConfig = z.infer<typeof deliveryConfigSchema>;
