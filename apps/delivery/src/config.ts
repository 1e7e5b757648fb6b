import { z } from 'zod';
import { envInt, envPort, envString, envUrl, vendorBaseUrlFields, vendorBaseUrlsOf } from '@pipeline/config';
import { warehouseConfigSchema, type ForwardingLimits } from '@pipeline/destinations';
import { egressConfigSchema } from '@pipeline/egress';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';

/** The forwarding app types whose vendor host can be replaced (VENDOR_BASE_URL_<APP TYPE>). */
const vendorAppTypes = ['amplitude', 'mixpanel', 'braze', 'customer_io', 'segment', 'onesignal'] as const;

export const deliveryConfigSchema = z.object({
  /** The PostgreSQL warehouse of `--destination warehouse` (created when missing). */
  WAREHOUSE_URL: envUrl(['postgres', 'postgresql'], 'postgres://postgres@127.0.0.1:5432/warehouse'),
  /** Forwarding kinds look each record's tenant up here (by write key id). */
  CONTROL_PLANE_URL: envUrl(['http', 'https']).optional(),
  INTERNAL_SERVICE_TOKEN: z.string().min(32, 'must have at least 32 characters').optional(),
  /** How long a looked-up tenant (destinations, credentials) is cached. */
  TENANT_CACHE_TTL_SECONDS: envInt({ min: 1, max: 3600, default: 60 }),
  /** GET /metrics (Prometheus) and GET /health of this consumer process. */
  DELIVERY_HTTP_PORT: envPort(9400),
  DELIVERY_HTTP_HOST: envString('0.0.0.0'),
  /** Attempts in all before a retryable failure is dead-lettered. */
  DELIVERY_MAX_ATTEMPTS: envInt({ min: 1, max: 50, default: 6 }),
  /** The wait before the second attempt; doubled for each further one, with jitter. */
  DELIVERY_RETRY_BASE_MS: envInt({ min: 10, max: 3_600_000, default: 2000 }),
  DELIVERY_RETRY_MAX_MS: envInt({ min: 10, max: 86_400_000, default: 600_000 }),
  /** How long the group waits for a consumer that stopped heartbeating before it rebalances. */
  DELIVERY_SESSION_TIMEOUT_MS: envInt({ min: 6000, max: 300_000, default: 30_000 }),
  /** One vendor request's time limit. */
  VENDOR_TIMEOUT_MS: envInt({ min: 100, max: 120_000, default: 10_000 }),
  /** A batch's time for every integration in it; what is still sending then is parked for a retry. */
  DELIVERY_BATCH_BUDGET_MS: envInt({ min: 1000, max: 600_000, default: 60_000 }),
  /** One integration's time within a batch. */
  DELIVERY_INTEGRATION_BUDGET_MS: envInt({ min: 500, max: 600_000, default: 20_000 }),
  /** Integrations of one batch sent at once. */
  DELIVERY_INTEGRATION_CONCURRENCY: envInt({ min: 1, max: 64, default: 4 }),
  /** Requests one send may make by halving after 413 answers. */
  DELIVERY_MAX_SPLIT_REQUESTS: envInt({ min: 2, max: 1000, default: 16 }),
  /** Consecutive failed sends that open an integration's circuit breaker. */
  DELIVERY_BREAKER_FAILURES: envInt({ min: 1, max: 1000, default: 5 }),
  /** How long an open circuit parks records before one probe request. */
  DELIVERY_BREAKER_COOLDOWN_MS: envInt({ min: 100, max: 3_600_000, default: 30_000 }),
  /**
   * Forwarding kinds: where the control plane broadcasts tenant changes (rotated credentials);
   * unset, a cached tenant is used at most 10 s.
   */
  REDIS_URL: envUrl(['redis', 'rediss']).optional(),
  ...warehouseConfigSchema.shape,
  ...egressConfigSchema.shape,
  ...vendorBaseUrlFields(vendorAppTypes),
  ...loggingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...kafkaConfigSchema.shape,
});

export type DeliveryConfig = z.infer<typeof deliveryConfigSchema>;

export function forwardingLimitsOf(config: DeliveryConfig): ForwardingLimits {
  return {
    batchBudgetMs: config.DELIVERY_BATCH_BUDGET_MS,
    integrationBudgetMs: config.DELIVERY_INTEGRATION_BUDGET_MS,
    concurrency: config.DELIVERY_INTEGRATION_CONCURRENCY,
    breakerFailures: config.DELIVERY_BREAKER_FAILURES,
    breakerCooldownMs: config.DELIVERY_BREAKER_COOLDOWN_MS,
  };
}

/** The base URLs the forwarders take, by app type. */
export function forwardingBaseUrls(config: DeliveryConfig): Partial<Record<string, string>> {
  return vendorBaseUrlsOf(config, vendorAppTypes);
}
