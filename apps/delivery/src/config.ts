import { baseUrlAppTypes } from '@pipeline/catalog';
import { z } from 'zod';
import {
  envBool,
  envInt,
  envPort,
  envString,
  envUrl,
  vendorBaseUrlFields,
  vendorBaseUrlsOf,
} from '@pipeline/config';
import {
  defaultRowsPerCopy,
  warehouseConfigSchema,
  warehouseUrlField,
  type ForwardingLimits,
  type FunctionBreakerOptions,
} from '@pipeline/destinations';
import type { FunctionLimits } from '@pipeline/functions';
import { egressConfigSchema } from '@pipeline/egress';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { tracingConfigSchema } from '@pipeline/telemetry';
import { redisClusterNodesField } from '@pipeline/redis';

/** The forwarding app types whose vendor host can be replaced (VENDOR_BASE_URL_<APP TYPE>), from the app catalog. */
const vendorAppTypes = baseUrlAppTypes.forwarding;

export const deliveryConfigSchema = z.object({
  WAREHOUSE_URL: warehouseUrlField('postgres://postgres@127.0.0.1:5432/warehouse').describe(
    "The warehouse of `--destination warehouse` without a control plane (`postgres://...`, `clickhouse://...` or `clickhouses://...`, as the control plane takes it): a schema (ClickHouse: a database) per account (`account_<id without dashes>`), created when missing. Read by the warehouse kind only: the forwarding kinds and `log` start without it, and it must not be set for them (it holds the platform warehouse's password).",
  ),
  CONTROL_PLANE_URL: envUrl(['http', 'https'])
    .optional()
    .describe(
      "Forwarding kinds: the control plane's base URL, where each record's tenant is looked up. `--destination warehouse`: where each account's warehouse placement is asked and each warehouse's status reported; unset, every account goes to `WAREHOUSE_URL`.",
    ),
  INTERNAL_SERVICE_TOKEN: z
    .string()
    .min(32, 'must have at least 32 characters')
    .optional()
    .describe(
      "Forwarding kinds: this consumer's own token for the control plane's lookup, the value of the control plane's `INTERNAL_TOKEN_DELIVERY_<APP TYPE>` for this kind; the lookup answers with this kind's destinations and credentials only. `--destination warehouse`: the control plane's `INTERNAL_TOKEN_DELIVERY_WAREHOUSE`.",
    ),
  TENANT_CACHE_TTL_SECONDS: envInt({ min: 1, max: 3600, default: 60 }).describe(
    "Forwarding kinds: how long a tenant's destinations and credentials are cached. `--destination warehouse` with a control plane: how long an account's warehouse placement is.",
  ),
  DELIVERY_HTTP_PORT: envPort(9400).describe(
    "Port of this consumer's `GET /metrics` (Prometheus) and `GET /health`.",
  ),
  DELIVERY_HTTP_HOST: envString('0.0.0.0').describe('Listen address of `/metrics` and `/health`.'),
  DELIVERY_MAX_ATTEMPTS: envInt({ min: 1, max: 50, default: 6 }).describe(
    'Attempts in all before a retryable failure is dead-lettered.',
  ),
  DELIVERY_RETRY_BASE_MS: envInt({ min: 10, max: 3_600_000, default: 2000 }).describe(
    "The wait before the second attempt; doubled for each further one, with jitter (half to all of it). A vendor's Retry-After is a lower bound.",
  ),
  DELIVERY_RETRY_MAX_MS: envInt({ min: 10, max: 86_400_000, default: 600_000 }).describe(
    'Ceiling of the wait between attempts.',
  ),
  DELIVERY_SESSION_TIMEOUT_MS: envInt({ min: 6000, max: 300_000, default: 30_000 }).describe(
    'How long the consumer group waits for a consumer that stopped heartbeating (a killed process) before its partitions move.',
  ),
  WAREHOUSE_ROWS_PER_COPY: envInt({ min: 1, max: 100_000, default: defaultRowsPerCopy }).describe(
    '`--destination warehouse`: rows of one account and table loaded by one COPY (docs/performance.md, "Warehouse").',
  ),
  WAREHOUSE_PARTITIONS_CONCURRENTLY: envInt({ min: 1, max: 32, default: 6 }).describe(
    '`--destination warehouse`: outbox partitions loaded at the same time, each on its own connection of the pool (docs/performance.md, "Warehouse"). The forwarding kinds take one partition at a time.',
  ),
  WAREHOUSE_CUSTOMER_BATCH_BUDGET_MS: envInt({ min: 100, max: 600_000, default: 5_000 }).describe(
    "`--destination warehouse`: a customer-owned warehouse's time in one batch; past it, what it has not taken is held in the retry topic as from a warehouse that is down, and the batch's other accounts go on.",
  ),
  VENDOR_TIMEOUT_MS: envInt({ min: 100, max: 120_000, default: 10_000 }).describe(
    "Forwarding kinds: one vendor request's time limit.",
  ),
  DELIVERY_BATCH_BUDGET_MS: envInt({ min: 1000, max: 600_000, default: 60_000 }).describe(
    "Forwarding kinds: a batch's time for every integration in it; what is still unsent then is parked in the retry topic.",
  ),
  DELIVERY_INTEGRATION_BUDGET_MS: envInt({ min: 500, max: 600_000, default: 20_000 }).describe(
    "Forwarding kinds: one integration's time within a batch.",
  ),
  DELIVERY_INTEGRATION_CONCURRENCY: envInt({ min: 1, max: 64, default: 4 }).describe(
    'Forwarding kinds: integrations of one batch sent at once.',
  ),
  DELIVERY_MAX_SPLIT_REQUESTS: envInt({ min: 2, max: 1000, default: 16 }).describe(
    'Forwarding kinds: requests one send may make by halving after 413 answers.',
  ),
  DELIVERY_BREAKER_FAILURES: envInt({ min: 1, max: 1000, default: 5 }).describe(
    "Forwarding kinds: consecutive failed sends that open an integration's circuit breaker.",
  ),
  DELIVERY_BREAKER_COOLDOWN_MS: envInt({ min: 100, max: 3_600_000, default: 30_000 }).describe(
    'Forwarding kinds: how long an open circuit parks records before one probe request.',
  ),
  FUNCTIONS_SANDBOX_PROCESSES: envInt({ min: 1, max: 16, default: 1 }).describe(
    'Forwarding kinds and the warehouse: sandbox processes that run tenant functions (docs/functions.md), forked on first use with an empty environment; a function version always runs in the same one.',
  ),
  FUNCTIONS_SANDBOX_UID: envInt({ min: 0, max: 4_294_967_294, default: 0 }).describe(
    'When the consumer runs as root: the user (and group) the sandbox processes run as, so that tenant code that escaped V8 could not read this process (docs/functions.md, "Security"). 0: the consumer\'s own user.',
  ),
  FUNCTION_CPU_MS_PER_EVENT: envInt({ min: 1, max: 1000, default: 5 }).describe(
    "A function's CPU time per event of a batch, up to `FUNCTION_MAX_BATCH_CPU_MS`; past it the batch is retried (`function_timeout`).",
  ),
  FUNCTION_MAX_BATCH_CPU_MS: envInt({ min: 10, max: 30_000, default: 1000 }).describe(
    "A function's CPU time for one batch, whatever its size.",
  ),
  FUNCTION_MEMORY_MB: envInt({ min: 8, max: 1024, default: 64 }).describe(
    "A function's heap; past it the batch is retried (`function_memory`) in a new isolate.",
  ),
  FUNCTION_BREAKER_FAILURES: envInt({ min: 1, max: 1000, default: 2 }).describe(
    'Batches in a row a function version fails (time, memory, sandbox crash) before it is disabled and its events are held.',
  ),
  FUNCTION_BREAKER_COOLDOWN_MS: envInt({ min: 100, max: 3_600_000, default: 30_000 }).describe(
    "How long a disabled function's events are held before one batch probes it again.",
  ),
  REDIS_URL: envUrl(['redis', 'rediss'])
    .optional()
    .describe(
      'Where the control plane broadcasts tenant changes (forwarding kinds: rotated credentials), and where the live debugger records delivery outcomes; unset: a cached tenant is used at most 10 s, and no outcome is recorded.',
    ),
  REDIS_CLUSTER_NODES: redisClusterNodesField,
  DEBUGGER_ENABLED: envBool(true).describe(
    'Record where each event went (stored, delivered, skipped, retried, dead-lettered) for the live debugger (needs `REDIS_URL` or `REDIS_CLUSTER_NODES`).',
  ),
  DEBUGGER_OUTCOMES_PER_KEY: envInt({ min: 10, max: 1_000_000, default: 5000 }).describe(
    'Debugger: recent delivery outcomes kept per write key (a capped Redis stream, approximate), all destinations together.',
  ),
  DEBUGGER_TTL_SECONDS: envInt({ min: 60, max: 30 * 86400, default: 86400 }).describe(
    "Debugger: a write key's recorded outcomes expire this long after its last recorded outcome.",
  ),
  DEBUGGER_MAX_EVENTS_PER_SECOND: envInt({ min: 1, max: 100_000, default: 50 }).describe(
    'Debugger: outcomes recorded per write key per second by one consumer; above it the rest of the second is not recorded.',
  ),
  ...warehouseConfigSchema.shape,
  ...egressConfigSchema.shape,
  ...vendorBaseUrlFields(vendorAppTypes),
  ...loggingConfigSchema.shape,
  ...tracingConfigSchema.shape,
  ...lifecycleConfigSchema.shape,
  ...kafkaConfigSchema.shape,
});

export type DeliveryConfig = z.infer<typeof deliveryConfigSchema>;

/** The dead-letter CLI's configuration: the broker and logging only. */
export const deadLetterConfigSchema = kafkaConfigSchema.extend(loggingConfigSchema.shape);

export function forwardingLimitsOf(config: DeliveryConfig): ForwardingLimits {
  return {
    batchBudgetMs: config.DELIVERY_BATCH_BUDGET_MS,
    integrationBudgetMs: config.DELIVERY_INTEGRATION_BUDGET_MS,
    concurrency: config.DELIVERY_INTEGRATION_CONCURRENCY,
    breakerFailures: config.DELIVERY_BREAKER_FAILURES,
    breakerCooldownMs: config.DELIVERY_BREAKER_COOLDOWN_MS,
  };
}

/** The limits and breaker of tenant functions (FUNCTION_*). */
export function functionSettingsOf(config: DeliveryConfig): {
  limits: Partial<FunctionLimits>;
  breaker: FunctionBreakerOptions;
} {
  return {
    limits: {
      cpuMsPerEvent: config.FUNCTION_CPU_MS_PER_EVENT,
      maxBatchCpuMs: config.FUNCTION_MAX_BATCH_CPU_MS,
      memoryMb: config.FUNCTION_MEMORY_MB,
    },
    breaker: { failures: config.FUNCTION_BREAKER_FAILURES, cooldownMs: config.FUNCTION_BREAKER_COOLDOWN_MS },
  };
}

/** The base URLs the forwarders take, by app type. */
export function forwardingBaseUrls(config: DeliveryConfig): Partial<Record<string, string>> {
  return vendorBaseUrlsOf(config, vendorAppTypes);
}
