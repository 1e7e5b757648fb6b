import { z } from 'zod';
import { envPort, envString } from '@pipeline/config';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { postgresConfigSchema } from '@pipeline/postgres';
import { CredentialCipher } from './apps/credential-cipher';

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
