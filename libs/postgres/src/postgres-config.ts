import { z } from 'zod';
import { envInt, envUrl } from '@pipeline/config';

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/pipeline';

export const postgresConfigSchema = z.object({
  DATABASE_URL: envUrl(['postgres', 'postgresql'], DEFAULT_DATABASE_URL).describe(
    "The control plane's PostgreSQL database (accounts, apps, sources, keys, jobs); the migration step creates it when missing.",
  ),
  DATABASE_POOL_MAX: envInt({ min: 1, max: 200, default: 10 }).describe(
    "Connections in the pool; replicas times this must stay below PostgreSQL's max_connections.",
  ),
});

export type PostgresConfig = z.infer<typeof postgresConfigSchema>;
