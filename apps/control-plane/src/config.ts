import { z } from 'zod';
import { envBool, envInt, envPort, envString, envUrl, vendorBaseUrlFields } from '@pipeline/config';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { warehouseConfigSchema } from '@pipeline/destinations';
import { egressConfigSchema } from '@pipeline/egress';
import { postgresConfigSchema } from '@pipeline/postgres';
import { CredentialCipher } from './apps/credential-cipher';
import { DEFAULT_WAREHOUSE_URL } from './tasks/warehouse-reader';
import { defaultPrices } from './usage/price-list';
import { defaultWriteKeyRateLimitCeilings, MAX_STORABLE_RATE_LIMIT } from './write-keys/rate-limits';

/** A non-negative decimal written as digits (no exponent), so the price list stays exact. */
const envDecimal = (defaultValue: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'expected a decimal number such as 0.023')
    .default(defaultValue);

/**
 * App types whose vendor host can be replaced (VENDOR_BASE_URL_<APP TYPE>): the sources the
 * sync engine reads and the destinations integration runs send to.
 */
export const vendorAppTypes = [
  'stripe',
  'shopify',
  'amplitude',
  'mixpanel',
  'braze',
  'customer_io',
  'segment',
  'onesignal',
] as const;

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
  /** The PostgreSQL warehouse: source syncs write their stream tables, task templates read. */
  WAREHOUSE_URL: envUrl(['postgres', 'postgresql'], DEFAULT_WAREHOUSE_URL),
  /** Run the task worker in this process (turn off to run API-only replicas). */
  TASK_WORKER_ENABLED: envBool(true),
  TASK_WORKER_CONCURRENCY: envInt({ default: 2, min: 1, max: 50 }),
  TASK_WORKER_POLL_INTERVAL_MS: envInt({ default: 1000, min: 10, max: 60_000 }),
  TASK_RUN_HEARTBEAT_INTERVAL_MS: envInt({ default: 5000, min: 10, max: 60_000 }),
  TASK_RUN_STALE_AFTER_MS: envInt({ default: 30_000, min: 100, max: 3_600_000 }),
  TASK_RUN_MAX_ATTEMPTS: envInt({ default: 2, min: 1, max: 10 }),
  /** Run the sync job runner (source syncs, integration runs) in this process. */
  JOB_WORKER_ENABLED: envBool(true),
  JOB_WORKER_CONCURRENCY: envInt({ default: 2, min: 1, max: 50 }),
  JOB_POLL_INTERVAL_MS: envInt({ default: 1000, min: 10, max: 60_000 }),
  JOB_HEARTBEAT_INTERVAL_MS: envInt({ default: 5000, min: 10, max: 60_000 }),
  JOB_STALE_AFTER_MS: envInt({ default: 60_000, min: 100, max: 3_600_000 }),
  /** Claims of a job in all (transient retries and lost workers); then it fails. */
  JOB_MAX_ATTEMPTS: envInt({ default: 4, min: 1, max: 20 }),
  /** Backoff before the first retry of a transient failure; doubles per attempt up to the max. */
  JOB_RETRY_BASE_MS: envInt({ default: 30_000, min: 0, max: 3_600_000 }),
  JOB_RETRY_MAX_MS: envInt({ default: 900_000, min: 0, max: 86_400_000 }),
  /** Queue scheduled syncs from this process (several replicas may; they share the work). */
  SCHEDULER_ENABLED: envBool(true),
  SCHEDULER_INTERVAL_MS: envInt({ default: 15_000, min: 10, max: 3_600_000 }),
  ...vendorBaseUrlFields(vendorAppTypes),
  /** How long an integration run waits for the source import it needs before looking again. */
  INTEGRATION_DEPENDENCY_RETRY_MS: envInt({ default: 300_000, min: 10, max: 86_400_000 }),
  /** Ceilings on the per-key rate limits a tenant may set on its write keys (README, "Write keys"). */
  WRITE_KEY_MAX_EVENTS_PER_SECOND: envInt({
    default: defaultWriteKeyRateLimitCeilings.eventsPerSecond,
    min: 1,
    max: MAX_STORABLE_RATE_LIMIT,
  }),
  WRITE_KEY_MAX_EVENTS_PER_DAY: envInt({
    default: defaultWriteKeyRateLimitCeilings.eventsPerDay,
    min: 1,
    max: MAX_STORABLE_RATE_LIMIT,
  }),
  /** The per-API-key request limit of /api/v1 and /mcp (README, "Rate limits"). */
  API_RATE_LIMIT_ENABLED: envBool(true),
  API_RATE_LIMIT_PER_MINUTE: envInt({ default: 600, min: 1, max: 1_000_000 }),
  /** Shares the API rate limit counts across instances; unset: each instance counts alone. */
  REDIS_URL: envUrl(['redis', 'rediss']).optional(),
  /** Usage prices in USD, exact decimals (README, "Usage"). */
  USAGE_PRICE_STORAGE_GB_MONTH: envDecimal(defaultPrices.storagePerGbMonth),
  USAGE_PRICE_QUERY_TB: envDecimal(defaultPrices.queryPerTb),
  USAGE_PRICE_COMPUTE_SECOND: envDecimal(defaultPrices.computePerSecond),
  USAGE_PRICE_MILLION_SYNC_ROWS: envDecimal(defaultPrices.syncRowsPerMillion),
  /** How often every account's usage of today and yesterday is metered. */
  USAGE_METERING_ENABLED: envBool(true),
  USAGE_METERING_INTERVAL_MS: envInt({ default: 3_600_000, min: 1000, max: 86_400_000 }),
  ...warehouseConfigSchema.shape,
  ...egressConfigSchema.shape,
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
