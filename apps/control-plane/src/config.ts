import { z } from 'zod';
import { envBool, envInt, envPort, envString, envUrl } from '@pipeline/config';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { postgresConfigSchema } from '@pipeline/postgres';
import { CredentialCipher } from './apps/credential-cipher';
import { DEFAULT_WAREHOUSE_URL } from './tasks/warehouse-reader';

export const controlPlaneConfigSchema = z.object({
  HOST: envString('0.0.0.0'),
  PORT: envPort(3000),
  /**
   * Keys for app credentials at rest: `keyId:base64(32 random bytes)`, comma-separated, the
   * first used for new writes. Generate one with `openssl rand -base64 32`.
   */
  CREDENTIALS_ENCRYPTION_KEYS: z.string().superRefine((value, ctx) => {
    try {
      CredentialCipher.parseKeys(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
    }
  }),
  /** Shared secret the ingestion service presents to resolve write keys (32+ characters). */
  INTERNAL_SERVICE_TOKEN: z.string().min(32, 'must have at least 32 characters'),
  /** The PostgreSQL warehouse the task templates read (read-only). */
  WAREHOUSE_URL: envUrl(['postgres', 'postgresql'], DEFAULT_WAREHOUSE_URL),
  /** Run the task worker in this process (turn off to run API-only replicas). */
  TASK_WORKER_ENABLED: envBool(true),
  TASK_WORKER_CONCURRENCY: envInt({ default: 2, min: 1, max: 50 }),
  TASK_WORKER_POLL_INTERVAL_MS: envInt({ default: 1000, min: 10, max: 60_000 }),
  TASK_RUN_HEARTBEAT_INTERVAL_MS: envInt({ default: 5000, min: 10, max: 60_000 }),
  TASK_RUN_STALE_AFTER_MS: envInt({ default: 30_000, min: 100, max: 3_600_000 }),
  TASK_RUN_MAX_ATTEMPTS: envInt({ default: 2, min: 1, max: 10 }),
  ...loggingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...postgresConfigSchema.shape,
});

/** What the migration step needs: the database only. */
export const migrateConfigSchema = z.object({
  ...loggingConfigSchema.shape,
  ...postgresConfigSchema.shape,
});

export type ControlPlaneConfig = z.infer<typeof controlPlaneConfigSchema>;
