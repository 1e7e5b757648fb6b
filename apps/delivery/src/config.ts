import { z } from 'zod';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';

export const deliveryConfigSchema = z.object({
  ...loggingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...kafkaConfigSchema.shape,
});

export type DeliveryConfig = z.infer<typeof deliveryConfigSchema>;
