import { z } from 'zod';
import { envUrl } from '@pipeline/config';

export const redisConfigSchema = z.object({
  REDIS_URL: envUrl(['redis', 'rediss'], 'redis://127.0.0.1:6379').describe('The Redis server.'),
});

export type RedisConfig = z.infer<typeof redisConfigSchema>;
