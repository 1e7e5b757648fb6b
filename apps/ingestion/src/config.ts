import { z } from 'zod';
import { envBool, envInt, envList, envPort, envString, envUrl } from '@pipeline/config';
import { warehouseConfigSchema } from '@pipeline/destinations';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';

/**
 * Read only in static mode. Hosted ingestion never touches the warehouse, so its manifests do
 * not mount the warehouse's credentials (tools/deploy/validate-manifests.mjs holds them to it).
 */
export const staticModeOnlyVariables = ['WAREHOUSE_URL'] as const;

export const ingestionConfigSchema = z
  .object({
    HOST: envString('0.0.0.0'),
    PORT: envPort(3001),
    /** Hosted mode: write keys are resolved through the control plane, the only source. */
    MANAGED_AUTH_ENABLED: envBool(false),
    /** Static mode: the one write key requests must present. */
    WRITE_KEY: z.string().min(8, 'must have at least 8 characters').optional(),
    CONTROL_PLANE_URL: envUrl(['http', 'https']).optional(),
    INTERNAL_SERVICE_TOKEN: z.string().min(32, 'must have at least 32 characters').optional(),
    WRITE_KEY_CACHE_TTL_SECONDS: envInt({ min: 1, max: 3600, default: 60 }),
    WRITE_KEY_NEGATIVE_CACHE_TTL_SECONDS: envInt({ min: 1, max: 3600, default: 10 }),
    /** The shared counter store for rate limits and dedupe; without it neither is shared. */
    REDIS_URL: envUrl(['redis', 'rediss']).optional(),
    RATE_LIMIT_LOCAL_BACKSTOP_EPS: envInt({ min: 1, max: 1_000_000, default: 500 }),
    RATE_LIMIT_EVENTS_PER_SECOND: envInt({ min: 1, max: 1_000_000, default: 100 }),
    RATE_LIMIT_EVENTS_PER_DAY: envInt({ min: 1, max: 1_000_000_000, default: 100_000 }),
    AUTH_RESOLUTION_ATTEMPTS_PER_MINUTE: envInt({ min: 1, max: 100_000, default: 60 }),
    /** Addresses (IPs, CIDRs, or loopback / linklocal / uniquelocal) whose X-Forwarded-For is believed. */
    TRUSTED_PROXIES: envList().optional(),
    SDK_JS_PATH: envString().optional(),
    /** Static mode: the warehouse events are written to (created when missing). */
    WAREHOUSE_URL: envUrl(['postgres', 'postgresql'], 'postgres://postgres@127.0.0.1:5432/warehouse'),
    WAREHOUSE_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
      .default('tracking'),
    /** Hosted mode: /health reports delivery unhealthy when a consumer group lags by more messages. */
    DELIVERY_LAG_UNHEALTHY: envInt({ min: 1, max: 1_000_000_000, default: 10_000 }),
    DEMO_MODE: envBool(false),
    ADMIN_SETUP_ENABLED: envBool(false),
    ADMIN_SETUP_TOKEN: z.string().min(16, 'must have at least 16 characters').optional(),
    ...warehouseConfigSchema.shape,
    ...loggingConfigSchema.shape,
    ...lifecycleConfigSchema.shape,
    ...kafkaConfigSchema.shape,
  })
  .superRefine((config, ctx) => {
    const require = (name: 'CONTROL_PLANE_URL' | 'INTERNAL_SERVICE_TOKEN' | 'WRITE_KEY', why: string) => {
      if (!config[name]) ctx.addIssue({ code: 'custom', path: [name], message: `required ${why}` });
    };
    if (config.MANAGED_AUTH_ENABLED) {
      require('CONTROL_PLANE_URL', 'when MANAGED_AUTH_ENABLED=true');
      require('INTERNAL_SERVICE_TOKEN', 'when MANAGED_AUTH_ENABLED=true');
      if (config.WRITE_KEY) {
        ctx.addIssue({
          code: 'custom',
          path: ['WRITE_KEY'],
          message: 'must not be set in hosted mode: the control plane is the only write-key source',
        });
      }
    } else {
      require('WRITE_KEY', 'in static mode (or set MANAGED_AUTH_ENABLED=true)');
    }
  });

export type IngestionConfig = z.infer<typeof ingestionConfigSchema>;
