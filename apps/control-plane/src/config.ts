import { baseUrlAppTypes, forwardingAppTypes } from '@pipeline/catalog';
import { z } from 'zod';
import { envBool, envInt, envList, envPort, envString, envUrl, vendorBaseUrlFields } from '@pipeline/config';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { warehouseConfigSchema, warehouseUrlField } from '@pipeline/destinations';
import { egressConfigSchema } from '@pipeline/egress';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { postgresConfigSchema } from '@pipeline/postgres';
import { CredentialCipher } from './apps/credential-cipher';
import { duplicateTokenProblems, internalTokenFields } from './auth/internal-tokens';
import { OPERATOR_TOKEN_MIN_LENGTH } from './auth/operator-token';
import { DEFAULT_WAREHOUSE_URL } from './warehouse-access/account-warehouses';
import { defaultAccountLimits, type AccountLimits } from './accounts/account-limits';
import { defaultPrices } from './usage/price-list';
import { defaultWriteKeyRateLimitCeilings, MAX_STORABLE_RATE_LIMIT } from './write-keys/rate-limits';
import { defaultDeadLetterLimits } from './dead-letters/dead-letter-limits';
import { tracingConfigSchema } from '@pipeline/telemetry';
import { redisClusterNodesField } from '@pipeline/redis';

/** A non-negative decimal written as digits (no exponent), so the price list stays exact. */
const envDecimal = (defaultValue: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'expected a decimal number such as 0.023')
    .default(defaultValue);

/**
 * App types whose vendor host can be replaced (VENDOR_BASE_URL_<APP TYPE>): the sources the
 * sync engine reads and the destinations integration runs send to, from the app catalog.
 */
export const vendorAppTypes = baseUrlAppTypes.all;

export const controlPlaneConfigSchema = z
  .object({
    HOST: envString('0.0.0.0').describe('Listen address.'),
    PORT: envPort(3000).describe(
      'Listen port of the management API, `/mcp`, `/docs` and `/internal/v1`; it answers 404 on `/api/v1/operator/...`.',
    ),
    OPERATOR_PORT: envPort(3100).describe(
      'Listen port of the operator API (`/api/v1/operator/...`) and of nothing else, opened only while `OPERATOR_API_TOKEN` is set; on `HOST`, never `PORT`. No Ingress may route it (docs/operations.md, "The operator API").',
    ),
    CREDENTIALS_ENCRYPTION_KEYS: z
      .string()
      .superRefine((value, ctx) => {
        try {
          CredentialCipher.parseKeys(value);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
        }
      })
      .describe(
        'Keys for app credentials at rest: `keyId:base64(32 random bytes)`, comma-separated; the first encrypts, every one listed decrypts (rotation). `openssl rand -base64 32` makes a key; `tools/dev.sh` makes local ones in `.cache/dev-secrets.env`.',
      ),
    ...internalTokenFields(forwardingAppTypes),
    OPERATOR_API_TOKEN: z
      .string()
      .min(OPERATOR_TOKEN_MIN_LENGTH, `must have at least ${OPERATOR_TOKEN_MIN_LENGTH} characters`)
      .optional()
      .describe(
        'The bearer token of the operator API (`/api/v1/operator/...`: warehouses, on `OPERATOR_PORT`), 32+ characters. Unset: the operator API is off and `OPERATOR_PORT` is not opened; the operator CLI works either way.',
      ),
    WAREHOUSE_URL: warehouseUrlField(DEFAULT_WAREHOUSE_URL).describe(
      'The default warehouse, created from it at the first start; at later starts its password follows it (docs/warehouses.md): `postgres://user:password@host:5432/database?sslmode=verify-full` (PostgreSQL, `sslmode` its one parameter), `clickhouse://user:password@host:8123/database` (ClickHouse over HTTP) or `clickhouses://user:password@host:8443/database` (HTTPS, certificate and host name verified; no parameters).',
    ),
    TASK_WORKER_ENABLED: envBool(true).describe(
      'Run the task worker in this process; `false` for API-only replicas.',
    ),
    TASK_WORKER_CONCURRENCY: envInt({ default: 2, min: 1, max: 50 }).describe(
      'Task runs executed at once per process.',
    ),
    TASK_RUN_MAX_RUNNING_PER_ACCOUNT: envInt({ min: 1, max: 1000 })
      .optional()
      .describe(
        "Task runs of one account running at once across every replica; an account at its cap waits while the others' runs are claimed. Unset: half of `TASK_WORKER_CONCURRENCY`, at least 1.",
      ),
    TASK_WORKER_POLL_INTERVAL_MS: envInt({ default: 1000, min: 10, max: 60_000 }).describe(
      'Idle polling of the task queue (a start in the same process wakes the worker at once).',
    ),
    TASK_RUN_HEARTBEAT_INTERVAL_MS: envInt({ default: 5000, min: 10, max: 60_000 }).describe(
      'Heartbeat of a running task run, and so how fast a cancel is noticed.',
    ),
    TASK_RUN_STALE_AFTER_MS: envInt({ default: 30_000, min: 100, max: 3_600_000 }).describe(
      'A running task run without a heartbeat this long belongs to a dead process and is reaped.',
    ),
    TASK_RUN_MAX_ATTEMPTS: envInt({ default: 2, min: 1, max: 10 }).describe(
      'Claims of a task run before a lost run fails.',
    ),
    JOB_WORKER_ENABLED: envBool(true).describe(
      'Run the job runner (source syncs, integration runs) in this process; `false` for API-only replicas.',
    ),
    JOB_WORKER_CONCURRENCY: envInt({ default: 2, min: 1, max: 50 }).describe('Jobs run at once per process.'),
    JOB_MAX_RUNNING_PER_ACCOUNT: envInt({ min: 1, max: 1000 })
      .optional()
      .describe(
        "Jobs (source syncs, integration runs) of one account running at once across every replica; an account at its cap waits while the others' jobs are claimed, so one account's slow syncs cannot hold every worker. Unset: half of `JOB_WORKER_CONCURRENCY`, at least 1.",
      ),
    JOB_POLL_INTERVAL_MS: envInt({ default: 1000, min: 10, max: 60_000 }).describe(
      'Idle polling of the job queue (a trigger in the same process wakes the runner at once).',
    ),
    JOB_HEARTBEAT_INTERVAL_MS: envInt({ default: 5000, min: 10, max: 60_000 }).describe(
      'Heartbeat of a running job, and so how fast a cancel is noticed.',
    ),
    JOB_STALE_AFTER_MS: envInt({ default: 60_000, min: 100, max: 3_600_000 }).describe(
      'A running job without a heartbeat this long is put back in the queue (or failed after `JOB_MAX_ATTEMPTS`).',
    ),
    JOB_MAX_ATTEMPTS: envInt({ default: 4, min: 1, max: 20 }).describe(
      'Claims of a job in all (transient retries and lost workers); then it fails.',
    ),
    JOB_RETRY_BASE_MS: envInt({ default: 30_000, min: 0, max: 3_600_000 }).describe(
      'Backoff before the first retry of a transient job failure; doubles per attempt up to `JOB_RETRY_MAX_MS`.',
    ),
    JOB_RETRY_MAX_MS: envInt({ default: 900_000, min: 0, max: 86_400_000 }).describe(
      'Ceiling of the job retry backoff.',
    ),
    SCHEDULER_ENABLED: envBool(true).describe(
      'Queue scheduled syncs and integration runs from this process (several replicas may; they share the work).',
    ),
    SCHEDULER_INTERVAL_MS: envInt({ default: 15_000, min: 10, max: 3_600_000 }).describe(
      'How often the scheduler looks for due sources and integrations.',
    ),
    PLAN_ALERTS_ENABLED: envBool(true).describe(
      'Send tracking plans\' violation alerts from this process (docs/tracking-plans.md, "Alerts"); several replicas share them, each window sent once. Needs REDIS_URL, where ingestion counts the violations.',
    ),
    PLAN_ALERTS_INTERVAL_MS: envInt({ default: 5_000, min: 10, max: 600_000 }).describe(
      'How often the alert sender looks for alerts whose window has ended.',
    ),
    PLAN_ALERTS_CONCURRENCY: envInt({ default: 8, min: 1, max: 256 }).describe(
      "Alerts one process sends at once: a tenant's slow webhook holds one of them, never another tenant's alert.",
    ),
    PLAN_ALERTS_TIMEOUT_MS: envInt({ default: 10_000, min: 100, max: 120_000 }).describe(
      "One alert POST's limit; a window is POSTed up to 3 times per try, then tried again with backoff and given up after 5 tries.",
    ),
    ...vendorBaseUrlFields(vendorAppTypes),
    WAREHOUSE_MOVE_CONSUMER_WAIT_MS: envInt({ default: 90_000, min: 0, max: 3_600_000 }).describe(
      "A warehouse move: how long after the target is announced the backfill starts, so that every warehouse consumer writes to both warehouses first. At least the consumers' `TENANT_CACHE_TTL_SECONDS` (60 s by default) plus a margin.",
    ),
    WAREHOUSE_MOVE_DEADLINE_MS: envInt({ default: 86_400_000, min: 1000, max: 2_592_000_000 }).describe(
      'A warehouse move not done this long after it was created fails (`warehouse_move_timed_out`), across restarts: before the cut-over the account stays on its source, after it on the target with the source schema kept.',
    ),
    WAREHOUSE_MOVE_DRAIN_MS: envInt({ default: 180_000, min: 0, max: 3_600_000 }).describe(
      "A warehouse move: how long after the cut-over the source is copied and compared once more before it is dropped, so that writers holding the old placement are done. At least the consumers' `TENANT_CACHE_TTL_SECONDS` plus a batch's longest write (`WAREHOUSE_STATEMENT_TIMEOUT_MS`).",
    ),
    WAREHOUSE_MOVE_BATCH_ROWS: envInt({ default: 10_000, min: 1, max: 1_000_000 }).describe(
      'A warehouse move: rows copied per batch (one transaction on the target); progress is saved after each.',
    ),
    INTEGRATION_DEPENDENCY_RETRY_MS: envInt({ default: 300_000, min: 10, max: 86_400_000 }).describe(
      'How long an integration run waits for the source import it needs before looking again.',
    ),
    WRITE_KEY_MAX_EVENTS_PER_SECOND: envInt({
      default: defaultWriteKeyRateLimitCeilings.eventsPerSecond,
      min: 1,
      max: MAX_STORABLE_RATE_LIMIT,
    }).describe('Ceiling on the per-second `rateLimits` a tenant may set on its write keys.'),
    WRITE_KEY_MAX_EVENTS_PER_DAY: envInt({
      default: defaultWriteKeyRateLimitCeilings.eventsPerDay,
      min: 1,
      max: MAX_STORABLE_RATE_LIMIT,
    }).describe('Ceiling on the daily `rateLimits` a tenant may set on its write keys.'),
    ACCOUNT_MAX_WRITE_KEYS: envInt({
      default: defaultAccountLimits.writeKeys,
      min: 1,
      max: 1_000_000,
    }).describe(
      'Active write keys one account may hold; one more is refused with 409 `account_limit_reached` (revoking one frees a slot).',
    ),
    ACCOUNT_MAX_SOURCES: envInt({ default: defaultAccountLimits.sources, min: 1, max: 1_000_000 }).describe(
      'Sources (not deleted) one account may hold; one more is refused with 409 `account_limit_reached`.',
    ),
    ACCOUNT_MAX_INTEGRATIONS: envInt({
      default: defaultAccountLimits.integrations,
      min: 1,
      max: 1_000_000,
    }).describe(
      'Integrations (not deleted) one account may hold; one more is refused with 409 `account_limit_reached`.',
    ),
    ACCOUNT_MAX_QUEUED_RUNS: envInt({
      default: defaultAccountLimits.queuedRuns,
      min: 1,
      max: 1_000_000,
    }).describe(
      "Jobs and task runs of one account waiting for a worker, together; one more sync, integration run or task run is refused with 409 `account_limit_reached`, and the scheduler skips that account's slots.",
    ),
    API_RATE_LIMIT_ENABLED: envBool(true).describe(
      'Limit the requests each API key may make to `/api/v1` and `/mcp`.',
    ),
    API_RATE_LIMIT_PER_MINUTE: envInt({ default: 600, min: 1, max: 1_000_000 }).describe(
      'Requests per API key per minute on `/api/v1` and `/mcp` together (a fixed window).',
    ),
    API_KEY_FAILURES_PER_MINUTE: envInt({ default: 30, min: 1, max: 1_000_000 }).describe(
      'Unknown or revoked API keys one client address (an IPv6 client: its /64) may present to `/api/v1` and `/mcp` in a minute; then every request of that address with a key is 429 `too_many_failed_attempts` until the minute ends.',
    ),
    OPERATOR_TOKEN_FAILURES_PER_MINUTE: envInt({ default: 10, min: 1, max: 1_000_000 }).describe(
      'Wrong operator tokens one client address (an IPv6 client: its /64) may present to `OPERATOR_PORT` in a minute; then every request of that address with a token is 429 `too_many_failed_attempts` until the minute ends. Each wrong token is logged (`operator token refused`, with the address, never the token).',
    ),
    APP_CONNECTION_TESTS_PER_MINUTE: envInt({ default: 10, min: 1, max: 1_000_000 }).describe(
      'Connections to a host an account names that its requests may open per minute: `POST /api/v1/apps/{id}/test-connection`, and a create or `PATCH` of a warehouse app that tests its connection or password; then 429 `connection_tests_rate_limited` until the minute ends (counted in Redis when set).',
    ),
    TRUSTED_PROXIES: envList()
      .optional()
      .describe(
        'IPs, CIDRs or `loopback` / `linklocal` / `uniquelocal` whose `X-Forwarded-For` is believed for the client address the failed-key limit counts; unset: the socket address.',
      ),
    REDIS_URL: envUrl(['redis', 'rediss'])
      .optional()
      .describe(
        'Shares the API rate limit counts across instances, broadcasts tenant changes (revoked keys, rotated credentials), and holds the live event debugger that `/api/v1/write-keys/{id}/events` reads; unset: each instance counts alone, and the debugger endpoints answer 503 `debugger_unavailable`.',
      ),
    REDIS_CLUSTER_NODES: redisClusterNodesField,
    USAGE_PRICE_STORAGE_GB_MONTH: envDecimal(defaultPrices.storagePerGbMonth).describe(
      'USD per GB-month of warehouse storage; a day costs size × price ÷ days of that month.',
    ),
    USAGE_PRICE_QUERY_TB: envDecimal(defaultPrices.queryPerTb).describe(
      'USD per TB processed by warehouse queries.',
    ),
    USAGE_PRICE_COMPUTE_SECOND: envDecimal(defaultPrices.computePerSecond).describe(
      'USD per compute second.',
    ),
    USAGE_PRICE_MILLION_SYNC_ROWS: envDecimal(defaultPrices.syncRowsPerMillion).describe(
      'USD per million sync rows.',
    ),
    USAGE_METERING_ENABLED: envBool(true).describe(
      "Meter every account's usage of today and yesterday in this process. The usage endpoints answer only what metering stored, so at least one control-plane process must meter.",
    ),
    USAGE_METERING_INTERVAL_MS: envInt({ default: 900_000, min: 1000, max: 86_400_000 }).describe(
      'How often usage is metered: how old, at most, the figures the usage endpoints answer are (their `meteredAt`).',
    ),
    USAGE_METERING_ACCOUNT_DEADLINE_MS: envInt({ default: 60_000, min: 1000, max: 3_600_000 }).describe(
      "An account's time in a metering pass: past it the pass records the account as failed (`metering_timed_out`, its usage of today answers 503 `warehouse_unavailable` until a pass succeeds) and goes on with the next account, so a customer's server that never answers delays nobody else's figures.",
    ),
    DEAD_LETTER_INDEX_ENABLED: envBool(true).describe(
      "Read every delivery kind's dead-letter topic (on `KAFKA_BROKERS`, under `KAFKA_TOPIC_PREFIX`) into the dead-letter index that `/api/v1/dead-letters` lists, in this process (its own consumer group, `<prefix>control-plane.dead-letter-index`, so several replicas share the work). `false` for API-only replicas; at least one process must index.",
    ),
    DEAD_LETTER_INDEX_MAX_PER_ACCOUNT: envInt({
      default: defaultDeadLetterLimits.maxPerAccount,
      min: 1,
      max: 10_000_000,
    }).describe(
      "Dead letters the index keeps per account (each up to 512 KB): a new one beyond that removes the account's least recently seen from the index (the dead-letter topic still holds it for the operator CLI).",
    ),
    DEAD_LETTER_INDEX_RETENTION_DAYS: envInt({
      default: defaultDeadLetterLimits.retentionDays,
      min: 1,
      max: 3650,
    }).describe(
      "Days the index keeps a dead letter after it was last seen: older ones are neither listed nor replayed, and are deleted hourly. The default is the dead-letter topics' own retention (30 days); a longer one keeps rows whose record the topic no longer has.",
    ),
    DEAD_LETTER_REPLAYS_PER_MINUTE: envInt({
      default: defaultDeadLetterLimits.replaysPerMinute,
      min: 1,
      max: 10_000,
    }).describe(
      'Replays (`POST /api/v1/dead-letters/replay`, up to 1000 letters each) one account may make per minute, across instances through Redis; one more is 429 `dead_letter_replay_rate_limited`.',
    ),
    REGULATION_SUBJECTS_PER_MONTH: envInt({ default: 110_000, min: 1, max: 100_000_000 }).describe(
      "Subject ids one account may name in privacy regulations (`POST /api/v1/regulations`) per calendar month (UTC), UNSUPPRESS not counted; past it the call is 429 `regulation_quota_exceeded` and nothing changes. The default is Segment's limit.",
    ),
    REGULATION_WORKER_ENABLED: envBool(true).describe(
      "Work the running privacy regulations in this process: record their fences, erase their subjects from the warehouse, the dead-letter index and the debugger, and send the vendors' deletions (docs/privacy.md). Several processes share the work, one regulation at a time each (a lease). `false` for API-only replicas; at least one process must work them.",
    ),
    REGULATION_WORKER_INTERVAL_MS: envInt({ default: 1000, min: 50, max: 600_000 }).describe(
      'How often the regulation worker looks for work.',
    ),
    REGULATION_FENCE_DELAY_MS: envInt({ default: 10_000, min: 0, max: 600_000 }).describe(
      'How long after a regulation is created its fence is recorded: the bound within which every ingestion instance and consumer honours a tenant change (10 s). Shorter only where every service hears changes at once.',
    ),
    REGULATION_WAREHOUSE_ROWS_PER_STEP: envInt({ default: 10_000, min: 1, max: 10_000_000 }).describe(
      "Warehouse rows one erasure statement of a regulation removes (PostgreSQL; ClickHouse erases a table per statement): the bound that lets other accounts' erasures and loads share the warehouse.",
    ),
    REGULATION_LEASE_MS: envInt({ default: 120_000, min: 1000, max: 3_600_000 }).describe(
      'How long a worker holds a running regulation between steps before another process may take it over (the holder died): at most the batch in flight when it died is sent again.',
    ),
    REGULATION_VENDOR_POLL_MS: envInt({ default: 3_600_000, min: 1000, max: 86_400_000 }).describe(
      'How often a vendor that deletes asynchronously (Amplitude, Mixpanel) is asked whether a forwarded deletion is done.',
    ),
    ...warehouseConfigSchema.shape,
    ...egressConfigSchema.shape,
    ...loggingConfigSchema.shape,
    ...tracingConfigSchema.shape,
    ...lifecycleConfigSchema.shape,
    ...postgresConfigSchema.shape,
    ...kafkaConfigSchema.shape,
  })
  .superRefine((config, ctx) => {
    // kafkaConfigSchema's own rule, which spreading its shape leaves behind.
    if (config.KAFKA_SASL_MECHANISM && (!config.KAFKA_SASL_USERNAME || !config.KAFKA_SASL_PASSWORD))
      ctx.addIssue({
        code: 'custom',
        path: [config.KAFKA_SASL_USERNAME ? 'KAFKA_SASL_PASSWORD' : 'KAFKA_SASL_USERNAME'],
        message: 'required when KAFKA_SASL_MECHANISM is set',
      });
    for (const { variable, message } of duplicateTokenProblems(config, forwardingAppTypes))
      ctx.addIssue({ code: 'custom', path: [variable], message });
    // One port for both would put the operator API back behind the public Ingress.
    if (config.OPERATOR_PORT === config.PORT)
      ctx.addIssue({
        code: 'custom',
        path: ['OPERATOR_PORT'],
        message: `must differ from PORT (${config.PORT}): the operator API never shares the public listener`,
      });
  });

/**
 * The per-account cap of running items of a queue: the configured one, or half of this
 * process's workers (at least 1), so one account never holds every worker of a default replica.
 */
export function maxRunningPerAccount(configured: number | undefined, concurrency: number): number {
  return configured ?? Math.max(1, Math.floor(concurrency / 2));
}

/** The ACCOUNT_MAX_* limits as the services take them. */
export function accountLimitsOf(config: ControlPlaneConfig): AccountLimits {
  return {
    writeKeys: config.ACCOUNT_MAX_WRITE_KEYS,
    sources: config.ACCOUNT_MAX_SOURCES,
    integrations: config.ACCOUNT_MAX_INTEGRATIONS,
    queuedRuns: config.ACCOUNT_MAX_QUEUED_RUNS,
  };
}

/** What the migration step needs: the database only. */
export const migrateConfigSchema = z.object({
  ...loggingConfigSchema.shape,
  ...postgresConfigSchema.shape,
});

/**
 * What the operator CLI needs: the database, the credential keys for the commands that seal
 * or open a warehouse's password (`warehouses add`, sizes in `warehouses list`), and the
 * control plane's Redis, where its placement and connection changes are broadcast to the
 * consumers (unset: they follow within their cache time).
 */
export const operatorCliConfigSchema = z.object({
  ...migrateConfigSchema.shape,
  CREDENTIALS_ENCRYPTION_KEYS: controlPlaneConfigSchema.shape.CREDENTIALS_ENCRYPTION_KEYS.optional(),
  REDIS_URL: controlPlaneConfigSchema.shape.REDIS_URL,
  REDIS_CLUSTER_NODES: controlPlaneConfigSchema.shape.REDIS_CLUSTER_NODES,
});

export type ControlPlaneConfig = z.infer<typeof controlPlaneConfigSchema>;
