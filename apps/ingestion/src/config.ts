import { z } from 'zod';
import { envBool, envInt, envList, envPort, envString, envUrl } from '@pipeline/config';
import { warehouseConfigSchema } from '@pipeline/destinations';
import { kafkaConfigSchema } from '@pipeline/kafka';
import { lifecycleConfigSchema } from '@pipeline/lifecycle';
import { loggingConfigSchema } from '@pipeline/logger';
import { tracingConfigSchema } from '@pipeline/telemetry';
import { DEFAULT_WINDOW_MS } from './limits/shared-store-batch';
import { redisClusterNodesField } from '@pipeline/redis';

/**
 * Read only in static mode. Hosted ingestion never touches the warehouse, so its manifests do
 * not mount the warehouse's credentials (tools/deploy/validate-manifests.mjs holds them to it).
 */
export const staticModeOnlyVariables = ['WAREHOUSE_URL'] as const;

export const ingestionConfigSchema = z
  .object({
    HOST: envString('0.0.0.0').describe('Listen address.'),
    PORT: envPort(3001).describe(
      "Listen port of the tracking API (`/collect`, Segment's routes, `/v1/sdk.js`).",
    ),
    METRICS_PORT: envPort(9464).describe(
      'Listen port of `GET /metrics` (Prometheus text) and `GET /health` with each delivery consumer group and its lag, apart from `PORT`: the public Ingress routes every path of `PORT`.',
    ),
    MANAGED_AUTH_ENABLED: envBool(false).describe(
      'Hosted mode: write keys are resolved through the control plane (needs `CONTROL_PLANE_URL` and `INTERNAL_SERVICE_TOKEN`) and events go to Kafka. `false`: static mode with one `WRITE_KEY`.',
    ),
    WRITE_KEY: z
      .string()
      .min(8, 'must have at least 8 characters')
      .optional()
      .describe("Static mode's one write key (required there; not allowed in hosted mode)."),
    CONTROL_PLANE_URL: envUrl(['http', 'https'])
      .optional()
      .describe("Hosted mode: the control plane's base URL, where write keys are resolved."),
    INTERNAL_SERVICE_TOKEN: z
      .string()
      .min(32, 'must have at least 32 characters')
      .optional()
      .describe(
        "Hosted mode: ingestion's own token for the control plane's write-key resolution, the value of the control plane's `INTERNAL_TOKEN_INGESTION`.",
      ),
    WRITE_KEY_CACHE_TTL_SECONDS: envInt({ min: 1, max: 3600, default: 60 }).describe(
      'How long a valid write key is cached.',
    ),
    WRITE_KEY_NEGATIVE_CACHE_TTL_SECONDS: envInt({ min: 1, max: 3600, default: 10 }).describe(
      'How long an unknown or revoked write key is cached.',
    ),
    REDIS_URL: envUrl(['redis', 'rediss'])
      .optional()
      .describe(
        'The shared counter store for rate limits and batch dedupe, where revocations are heard, and where the live debugger records (both modes); unset: neither is shared, each instance counts alone, and the debugger is empty.',
      ),
    REDIS_CLUSTER_NODES: redisClusterNodesField,
    REDIS_BATCH_WINDOW_MS: envInt({ min: 0, max: 50, default: DEFAULT_WINDOW_MS }).describe(
      "How long /collect's rate-limit commands wait for other requests' before they leave for Redis together, as one script call (docs/performance.md). 0: the requests of the same event-loop turn, and while a call is in flight, whatever comes before it returns. Above 0 it adds at most this to a request's time. Dedupe marks wait up to 5 ms for a rate-limit call to ride with.",
    ),
    DEBUGGER_ENABLED: envBool(true).describe(
      'Record each write key\'s recent events for the live debugger (needs `REDIS_URL` or `REDIS_CLUSTER_NODES`; docs/tracking-api.md, "Debugger").',
    ),
    DEBUGGER_EVENTS_PER_KEY: envInt({ min: 10, max: 100_000, default: 500 }).describe(
      'Debugger: recent events kept per write key (a capped Redis stream, approximate).',
    ),
    DEBUGGER_TTL_SECONDS: envInt({ min: 60, max: 30 * 86400, default: 86400 }).describe(
      "Debugger: a write key's recorded events expire this long after its last recorded event.",
    ),
    DEBUGGER_MAX_EVENTS_PER_SECOND: envInt({ min: 1, max: 100_000, default: 50 }).describe(
      'Debugger: events recorded per write key per second per instance; above it the rest of the second is not recorded (counted in `pipeline_ingestion_debugger_events_total`).',
    ),
    OUTBOX_COMPRESSION: z
      .enum(['none', 'gzip', 'lz4'])
      .default('none')
      .describe(
        "Hosted mode: the codec of the outbox's record batches. `lz4` keeps about a sixth of the bytes on the brokers at the same CPU per request (docs/performance.md); deploy the delivery consumers of this version first, older ones cannot read it.",
      ),
    RATE_LIMIT_LOCAL_BACKSTOP_EPS: envInt({ min: 1, max: 1_000_000, default: 500 }).describe(
      'Events per second per write key per instance; holds without Redis.',
    ),
    RATE_LIMIT_EVENTS_PER_SECOND: envInt({ min: 1, max: 1_000_000, default: 100 }).describe(
      "Events per second per write key across instances (Redis), unless the key's `rateLimits` say otherwise.",
    ),
    RATE_LIMIT_EVENTS_PER_DAY: envInt({ min: 1, max: 1_000_000_000, default: 100_000 }).describe(
      "Events per UTC day per write key across instances (Redis), unless the key's `rateLimits` say otherwise.",
    ),
    AUTH_RESOLUTION_ATTEMPTS_PER_MINUTE: envInt({ min: 1, max: 100_000, default: 60 }).describe(
      'Write-key checks per client IP per minute, counting only keys not in the valid-key cache.',
    ),
    TRUSTED_PROXIES: envList()
      .optional()
      .describe(
        'IPs, CIDRs or `loopback` / `linklocal` / `uniquelocal` whose `X-Forwarded-For` is believed for `context_ip`.',
      ),
    PUBLIC_TRACKING_URL: envUrl(['http', 'https'])
      .refine((value) => URL.canParse(value) && /^[a-z]+:\/\/[^/?#@]+\/?$/i.test(value), {
        message: 'expected an origin such as https://track.example.com, without a path or query',
      })
      .optional()
      .describe(
        "The tracking API's public origin as browsers reach it (e.g. `https://track.example.com`): the `apiHost` and `protocol` of the Segment settings document (`GET /v1/projects/{writeKey}/settings`), which CDNs cache. Never taken from request headers. Unset (local development): the address and port the request arrived at.",
      ),
    SDK_JS_PATH: envString()
      .optional()
      .describe('The SDK file served at `/v1/sdk.js`; unset: the SDK build, `libs/sdk/dist/sdk.js`.'),
    WAREHOUSE_URL: envUrl(
      ['postgres', 'postgresql'],
      'postgres://postgres@127.0.0.1:5432/warehouse',
    ).describe('Static mode: the PostgreSQL warehouse events are written to (created when missing).'),
    WAREHOUSE_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case SQL identifier')
      .default('tracking')
      .describe('Static mode: the warehouse schema events are written to.'),
    DELIVERY_LAG_UNHEALTHY: envInt({ min: 1, max: 1_000_000_000, default: 10_000 }).describe(
      'Hosted mode: `/health` reports a delivery kind `healthy: false`, and `deliveryHealthy: false`, when its consumer group lags by more records (the groups and their lag on `METRICS_PORT` only).',
    ),
    DEMO_MODE: envBool(false).describe('With `ADMIN_SETUP_ENABLED`: serve `POST /admin/simulate`.'),
    ADMIN_SETUP_ENABLED: envBool(false).describe('With `DEMO_MODE`: serve `POST /admin/simulate`.'),
    ADMIN_SETUP_TOKEN: z
      .string()
      .min(16, 'must have at least 16 characters')
      .optional()
      .describe('The `X-Admin-Token` that `POST /admin/simulate` requires.'),
    ...warehouseConfigSchema.shape,
    ...loggingConfigSchema.shape,
    ...tracingConfigSchema.shape,
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
