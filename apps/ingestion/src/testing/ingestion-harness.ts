import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import type { Kafka, Producer } from 'kafkajs';
import request from 'supertest';
import { loadConfig } from '@pipeline/config';
import { parseOutboxEnvelope, type OutboxEnvelope, type PlanVerdict } from '@pipeline/events';
import {
  createKafka,
  createProducer,
  ensureTopics,
  kafkaConfigSchema,
  readTopicSnapshot,
} from '@pipeline/kafka';
import type { WarehouseWriter } from '@pipeline/destinations';
import { sharedCheck } from '@pipeline/lifecycle';
import { createLogger, type Logger } from '@pipeline/logger';
import {
  createRedis,
  DebugStreamWriter,
  ViolationLedger,
  type RedisClient,
  type RedisConnection,
} from '@pipeline/redis';
import { DebugRecorder } from '../debugger/debug-recorder';
import {
  clientAddressResolver,
  ControlPlaneClient,
  RegulatedSubjectsCache,
  TenantChangePublisher,
  TenantChangeSubscriber,
  TrackingPlanCache,
} from '@pipeline/tenancy';
import {
  startHarness as startControlPlane,
  TEST_INTERNAL_TOKEN,
  type Harness as ControlPlane,
} from '@pipeline/control-plane/testing/harness';
import { createApp } from '../app';
import { HostedAuthenticator } from '../auth/hosted-authenticator';
import { StaticAuthenticator } from '../auth/static-authenticator';
import { CollectService } from '../collect/collect-service';
import { PlanDoor } from '../collect/plan-door';
import { RegulationDoor } from '../collect/regulation-door';
import { OutboxHealth, StaticHealth } from '../health/delivery-health';
import { KafkaReadiness } from '../health/kafka-readiness';
import { IngestionMetrics, metricsHttp } from '../metrics/ingestion-metrics';
import { AuthAttemptLimiter, LocalBackstop, SharedRateLimiter } from '../limits/rate-limits';
import { BatchDedupe } from '../outbox/batch-dedupe';
import { OutboxPublisher, type OutboxCompression } from '../outbox/outbox-publisher';
import type { SdkFile } from '../sdk/sdk-file';
import { staticTenant } from '../static/static-tenant';
import { WarehouseStaticDelivery } from '../static/warehouse-delivery';

export interface HostedOptions {
  backstopEps?: number;
  perSecond?: number;
  perDay?: number;
  authAttemptsPerMinute?: number;
  /** The rate limits' clock (ms since the epoch); the real one unless given. */
  now?: () => number;
  /** The write-key cache's clock, so a test expires cached keys by moving it; the real one unless given. */
  cacheNow?: () => number;
  withRedis?: boolean;
  trustedProxies?: string[];
  simulate?: { demoMode: boolean; adminSetupEnabled: boolean; adminToken?: string };
  sdkPath?: string;
  /** Another broker than KAFKA_BROKERS (the fault test's own). */
  kafkaBrokers?: string;
  publishTimeoutMs?: number;
  /** The outbox codec; LZ4 unless told, so the suites read back what a compressed send wrote. */
  compression?: OutboxCompression;
  /**
   * The shared store of the limits and the batch dedupe (a cluster's seed nodes, or a server);
   * REDIS_URL's server unless given.
   */
  redis?: RedisConnection;
  /**
   * The control plane broadcasts tenant changes on `redis` and each ingestion instance hears them
   * (TenantChangeSubscriber, as composition.ts wires it).
   */
  tenantChanges?: boolean;
  /** The live debugger's recorder on this Redis (a closed port: Redis down). */
  debugger?: {
    connection: RedisConnection;
    maxPerSecond?: number;
    maxLen?: number;
    /** The sampling window's clock; the real one unless given. */
    now?: () => number;
  };
  /**
   * The plan door's violation ledger on this Redis (the control plane reads the same keys);
   * unset: violations are counted in the metrics only.
   */
  violationCounts?: { connection: RedisConnection; now?: () => number };
  /** PUBLIC_TRACKING_URL; unset: the Segment settings name the address a request arrived at. */
  publicTrackingUrl?: string;
  /** DELIVERY_LAG_UNHEALTHY of /health; 1,000 unless given. */
  deliveryLagUnhealthy?: number;
  /**
   * Where the plan door reads tracking plan versions (a closed port: the control plane down for
   * them alone); the suite's control plane unless given.
   */
  trackingPlanUrl?: string;
  /** The plan cache's back-off after a version could not be read; 5 s unless given. */
  planRetryAfterMs?: number;
}

/** One account of the suite's control plane, with its write keys. */
export interface HostedTenant {
  accountId: string;
  /** The account's API key (control plane API). */
  apiKey: string;
  /** A write key of the account (Amplitude destination); allowed origins: example.com. */
  writeKey: string;
  writeKeyId: string;
  /** A write key with no origin restriction. */
  openWriteKey: string;
  /** openWriteKey's id (the debugger's streams are named by it). */
  openWriteKeyId: string;
}

export interface Hosted {
  app: ReturnType<typeof createApp>;
  /** The metrics port's listener (GET /metrics, GET /health with the lag), as main.ts serves it. */
  metricsApp: RequestListener;
  metrics: IngestionMetrics;
  collectService: CollectService;
  controlPlane: ControlPlane;
  controlPlaneServer: Server;
  kafka: Kafka;
  topic: string;
  /** The consumer group /health reports as the `log` kind's. */
  healthGroup: string;
  logs: string[];
  /** A write key of a tenant with an Amplitude destination; allowed origins: example.com. */
  writeKey: string;
  /** A write key with no origin restriction. */
  openWriteKey: string;
  /** openWriteKey's id (the debugger's streams are named by it). */
  openWriteKeyId: string;
  /** The limits' and dedupe's client (under `redisKeyPrefix`); null with `withRedis: false`. */
  redis: RedisClient | null;
  /** The key prefix every instance of this suite's ingestion shares in the store. */
  redisKeyPrefix: string;
  /** This instance's tenant change subscription, with `tenantChanges`. */
  tenantChanges: TenantChangeSubscriber | null;
  /** The debugger recorder's Redis connection, when `debugger` was given. */
  debugRedis: RedisClient | null;
  /** The debugger recorder's counters, when `debugger` was given. */
  debugStats: DebugStreamWriter['stats'] | null;
  /** The violation ledger's counters; null without `violationCounts`. */
  violationStats: ViolationLedger['stats'] | null;
  accountId: string;
  apiKey: string;
  /**
   * Two accounts of the same control plane, set up alike: `a` is the one the fields above name,
   * `b` another, so a test shows that one account's requests never answer or count for the other.
   */
  tenants: { a: HostedTenant; b: HostedTenant };
  /** Every envelope in the suite's topic, read from the beginning. */
  readTopic(expectedAtLeast?: number): Promise<CommittedEvent[]>;
  /**
   * Another ingestion instance behind the same load balancer: the same control plane, topic and
   * store, its own connections, caches and local backstop (the suite's options, with `overrides`).
   * Closed by `close`.
   */
  startInstance(overrides?: HostedOptions): Promise<IngestionInstance>;
  close(): Promise<void>;
}

/** One committed event with its record's receipt facts. */
export type CommittedEvent = Omit<OutboxEnvelope, 'events' | 'verdicts'> & {
  event: OutboxEnvelope['events'][number];
  /** The event's verdict (the one at its place in the record's `verdicts`), when the key binds a plan. */
  verdict?: PlanVerdict;
};

export const event = (overrides: Record<string, unknown> = {}) => ({
  type: 'track',
  event: 'Clicked',
  messageId: randomUUID(),
  timestamp: new Date().toISOString(),
  anonymousId: 'anon-1',
  ...overrides,
});

/**
 * A web-tracking app of the key's account sending its events to a new destination app (`app`
 * is the POST /api/v1/apps body); the destination app's id.
 */
export async function webTrackingTo(api: ReturnType<ControlPlane['as']>, app: object): Promise<string> {
  const web = (await api.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Site' })).body
    .data.id;
  const destination = (await api.post('/api/v1/apps').send(app)).body.data.id as string;
  await api.post('/api/v1/integrations').send({
    sourceAppId: web,
    destinationAppId: destination,
    dataType: 'events',
    config: { global: {}, tasks: [{ task_type: 'events' }] },
    schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
  });
  return destination;
}

/** A new account with an Amplitude destination, a write key limited to example.com and an open one. */
async function hostedTenant(controlPlane: ControlPlane): Promise<HostedTenant> {
  const tenant = await controlPlane.tenant();
  const api = controlPlane.as(tenant.key);
  await webTrackingTo(api, { appType: 'amplitude', displayName: 'Amp', credentials: { apiKey: 'amp' } });
  const site = (await api.post('/api/v1/write-keys').send({ name: 'site', allowedOrigins: ['example.com'] }))
    .body.data;
  const open = (await api.post('/api/v1/write-keys').send({ name: 'open' })).body.data;
  return {
    accountId: tenant.accountId,
    apiKey: tenant.key,
    writeKey: site.key as string,
    writeKeyId: site.id as string,
    openWriteKey: open.key as string,
    openWriteKeyId: open.id as string,
  };
}

/** One ingestion instance of a suite, wired as composition.ts wires one. */
export interface IngestionInstance {
  app: ReturnType<typeof createApp>;
  collectService: CollectService;
  metrics: IngestionMetrics;
  redis: RedisClient | null;
  debugRedis: RedisClient | null;
  debugWriter: DebugStreamWriter | null;
  ledger: ViolationLedger | null;
  tenantChanges: TenantChangeSubscriber | null;
  close(): Promise<void>;
}

/** The store of the limits and dedupe: the options' own, or REDIS_URL's server. */
const storeOf = (options: HostedOptions): RedisConnection =>
  options.redis ?? { REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' };

async function ingestionInstance(
  options: HostedOptions,
  suite: {
    cpUrl: string;
    logger: Logger;
    producer: Producer;
    topic: string;
    health: OutboxHealth;
    kafkaReadiness: KafkaReadiness;
    redisKeyPrefix: string;
  },
): Promise<IngestionInstance> {
  const { logger } = suite;
  let redis: RedisClient | null = null;
  if (options.withRedis !== false) {
    redis = createRedis(storeOf(options), { logger, keyPrefix: suite.redisKeyPrefix });
    await redis.connect();
  }
  // As composition.ts wires them.
  const metrics = new IngestionMetrics({ defaultMetrics: true });
  const publisher = new OutboxPublisher(suite.producer, {
    topic: suite.topic,
    timeoutMs: options.publishTimeoutMs ?? 8000,
    compression: options.compression ?? 'lz4',
  });
  metrics.watchOutbox(() => publisher.pending);
  let debugRedis: RedisClient | null = null;
  let debugWriter: DebugStreamWriter | null = null;
  if (options.debugger) {
    debugRedis = createRedis(options.debugger.connection, { logger });
    // As composition.ts: down at start is not fatal.
    await debugRedis.connect().catch(() => undefined);
    debugWriter = new DebugStreamWriter(
      debugRedis,
      {
        maxLen: options.debugger.maxLen ?? 500,
        ttlSeconds: 3600,
        maxPerSecond: options.debugger.maxPerSecond ?? 50,
      },
      logger,
      options.debugger.now,
    );
    const writer = debugWriter;
    metrics.watchDebugger(() => writer.stats);
  }
  let ledgerRedis: RedisClient | null = null;
  let ledger: ViolationLedger | null = null;
  if (options.violationCounts) {
    ledgerRedis = createRedis(options.violationCounts.connection, { logger });
    await ledgerRedis.connect().catch(() => undefined);
    ledger = new ViolationLedger(ledgerRedis, logger, {}, options.violationCounts.now);
    const counts = ledger;
    metrics.watchViolationCounts(() => counts.stats);
  }
  let tenantChanges: TenantChangeSubscriber | null = null;
  const controlPlane = new ControlPlaneClient(suite.cpUrl, TEST_INTERNAL_TOKEN, logger);
  const authenticator = new HostedAuthenticator(
    controlPlane,
    {
      validTtlMs: 60_000,
      invalidTtlMs: 10_000,
      onCacheResult: metrics.writeKeyCache,
      ...(options.tenantChanges ? { hearsRevocations: () => tenantChanges?.live ?? false } : {}),
    },
    logger,
    options.cacheNow,
  );
  const regulations = new RegulatedSubjectsCache(
    controlPlane,
    {
      ttlMs: 60_000,
      ...(options.tenantChanges ? { hearsChanges: () => tenantChanges?.live ?? false } : {}),
    },
    logger,
    options.cacheNow,
  );
  if (options.tenantChanges)
    tenantChanges = TenantChangeSubscriber.start(
      storeOf(options),
      (event) => {
        authenticator.invalidate(event);
        regulations.invalidate(event);
      },
      logger,
    );
  const collectService = new CollectService({
    ...(debugWriter ? { recorder: new DebugRecorder(debugWriter) } : {}),
    authenticator,
    logger,
    metrics,
    hosted: {
      publisher,
      dedupe: new BatchDedupe(redis, logger),
      backstop: new LocalBackstop(options.backstopEps ?? 500, options.now),
      shared: new SharedRateLimiter(
        redis,
        { eventsPerSecond: options.perSecond ?? 10_000, eventsPerDay: options.perDay ?? 1_000_000 },
        logger,
        options.now,
      ),
      authAttempts: new AuthAttemptLimiter(redis, options.authAttemptsPerMinute ?? 1000, options.now),
      regulations: new RegulationDoor(regulations, logger),
      plans: new PlanDoor(
        new TrackingPlanCache(
          options.trackingPlanUrl
            ? new ControlPlaneClient(options.trackingPlanUrl, TEST_INTERNAL_TOKEN, logger, 500)
            : controlPlane,
          logger,
          {
            onCompiled: metrics.planCompiled,
            ...(options.planRetryAfterMs !== undefined ? { retryAfterMs: options.planRetryAfterMs } : {}),
          },
        ),
        metrics,
        logger,
        ledger ?? undefined,
      ),
    },
  });
  const app = createApp({
    logger,
    collect: collectService,
    health: suite.health,
    sdk: null,
    simulate: options.simulate ?? { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
    clientAddress: clientAddressResolver(options.trustedProxies),
    readiness: { kafka: sharedCheck(suite.kafkaReadiness.check, 0) },
    ...(options.publicTrackingUrl ? { publicTrackingUrl: options.publicTrackingUrl } : {}),
  });
  return {
    app,
    collectService,
    metrics,
    redis,
    debugRedis,
    debugWriter,
    ledger,
    tenantChanges,
    async close() {
      await tenantChanges?.stop();
      if (redis) await redis.quit();
      debugRedis?.disconnect();
      ledgerRedis?.disconnect();
    },
  };
}

export async function startHosted(label: string, options: HostedOptions = {}): Promise<Hosted> {
  // With the debugger, the control plane reads what this ingestion records (its own connection).
  const cpDebugRedis = options.debugger
    ? createRedis(options.debugger.connection, {
        logger: createLogger({ service: 'control-plane-test', stream: new PassThrough() }),
      })
    : null;
  await cpDebugRedis?.connect().catch(() => undefined);
  // The control plane's own client carries a key prefix: channels are never prefixed.
  const cpRedis = options.tenantChanges
    ? createRedis(storeOf(options), {
        logger: createLogger({ service: 'control-plane-test', stream: new PassThrough() }),
        keyPrefix: 'control-plane:',
      })
    : null;
  await cpRedis?.connect();
  const controlPlane = await startControlPlane(`ingestion ${label}`, {
    ...(cpDebugRedis && options.debugger
      ? { debugger: { redis: cpDebugRedis, connection: options.debugger.connection } }
      : {}),
    ...(cpRedis
      ? {
          tenantChanges: new TenantChangePublisher(
            cpRedis,
            createLogger({ service: 'control-plane-test', stream: new PassThrough() }),
          ),
        }
      : {}),
  });
  const controlPlaneServer = createServer(controlPlane.app);
  await new Promise<void>((resolve) => controlPlaneServer.listen(0, '127.0.0.1', resolve));
  const cpUrl = `http://127.0.0.1:${(controlPlaneServer.address() as AddressInfo).port}`;

  const tenants = { a: await hostedTenant(controlPlane), b: await hostedTenant(controlPlane) };
  const { writeKey, openWriteKey, openWriteKeyId, accountId, apiKey } = tenants.a;

  const logs: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  const logger = createLogger({ service: 'ingestion-test', stream, level: 'debug' });
  const kafkaEnv = options.kafkaBrokers
    ? { ...process.env, KAFKA_BROKERS: options.kafkaBrokers }
    : process.env;
  const kafka = createKafka(loadConfig(kafkaConfigSchema, kafkaEnv), {
    clientId: 'ingestion-test',
    logger,
  });
  const topic = `test.ingest.${randomUUID()}`;
  await ensureTopics(kafka, [{ topic, numPartitions: 3 }], { replicationFactor: 1, logger });
  const producer = createProducer(kafka);
  await producer.connect();
  const healthGroup = `test-group-${randomUUID()}`;
  const health = new OutboxHealth(
    kafka,
    topic,
    { log: healthGroup },
    {
      lagThreshold: options.deliveryLagUnhealthy ?? 1000,
      cacheMs: 0,
    },
  );
  const kafkaReadiness = new KafkaReadiness(kafka, topic);
  const redisKeyPrefix = `test:${randomUUID()}:`;
  const instances: IngestionInstance[] = [];
  const startInstance = async (overrides: HostedOptions = {}) => {
    const instance = await ingestionInstance(
      { ...options, ...overrides },
      {
        cpUrl,
        logger,
        producer,
        topic,
        health,
        kafkaReadiness,
        redisKeyPrefix,
      },
    );
    instances.push(instance);
    return instance;
  };
  const first = await startInstance();
  const {
    app,
    metrics,
    collectService: collect,
    redis,
    debugRedis,
    debugWriter,
    ledger,
    tenantChanges,
  } = first;

  return {
    app,
    metricsApp: metricsHttp(metrics, health),
    metrics,
    collectService: collect,
    controlPlane,
    controlPlaneServer,
    kafka,
    topic,
    healthGroup,
    logs,
    writeKey,
    openWriteKey,
    openWriteKeyId,
    redis,
    redisKeyPrefix,
    tenantChanges,
    debugRedis,
    debugStats: debugWriter?.stats ?? null,
    violationStats: ledger?.stats ?? null,
    startInstance,
    accountId,
    apiKey,
    tenants,
    async readTopic(expectedAtLeast = 0) {
      // Records still arriving (a test may ask for more than the topic holds yet) are waited for.
      const deadline = Date.now() + 20_000;
      for (;;) {
        const envelopes = (await readTopicSnapshot(kafka, topic, {}, 20_000)).flatMap(({ value }) => {
          const envelope = parseOutboxEnvelope(value);
          if (!envelope) return [];
          const { events, verdicts, ...receipt } = envelope;
          return events.map((committed, i): CommittedEvent =>
            verdicts
              ? { ...receipt, event: committed, verdict: verdicts[i] }
              : { ...receipt, event: committed },
          );
        });
        if (envelopes.length >= expectedAtLeast) return envelopes;
        if (Date.now() > deadline) throw new Error(`read ${envelopes.length} of ${expectedAtLeast} events`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async close() {
      await health.close();
      await kafkaReadiness.reset();
      await producer.disconnect();
      for (const instance of instances) await instance.close();
      controlPlaneServer.closeAllConnections();
      await new Promise((resolve) => controlPlaneServer.close(resolve));
      await controlPlane.close();
      cpDebugRedis?.disconnect();
      if (cpRedis) await cpRedis.quit();
    },
  };
}

export const collect = (app: Hosted['app']) => request(app).post('/collect');

/**
 * Ingestion in static mode (one write key, straight into the warehouse schema), as composition.ts
 * wires it.
 */
export function staticApp(
  writer: WarehouseWriter,
  options: {
    writeKey: string;
    schema?: string;
    sdk?: SdkFile | null;
    recorder?: DebugRecorder;
    publicTrackingUrl?: string;
  },
): ReturnType<typeof createApp> {
  const logger = createLogger({ service: 'ingestion-test', stream: new PassThrough() });
  const schema = options.schema ?? 'tracking';
  return createApp({
    logger,
    collect: new CollectService({
      ...(options.recorder ? { recorder: options.recorder } : {}),
      authenticator: new StaticAuthenticator(options.writeKey, staticTenant(schema)),
      logger,
      staticDelivery: new WarehouseStaticDelivery(writer, schema, logger),
    }),
    health: new StaticHealth(),
    sdk: options.sdk ?? null,
    simulate: { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
    clientAddress: clientAddressResolver(undefined),
    ...(options.publicTrackingUrl ? { publicTrackingUrl: options.publicTrackingUrl } : {}),
  });
}
