import { z } from 'zod';
import { envInt, envUrl } from '@pipeline/config';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/pipeline';

export const postgresConfigSchema = z.object({
  DATABASE_URL: envUrl(['postgres', 'postgresql'], DEFAULT_DATABASE_URL),
  DATABASE_POOL_MAX: envInt({ min: 1, max: 200, default: 10 }),
});

export type PostgresConfig = z.infer<typeof postgresConfigSchema>;
