import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import type { Producer } from 'kafkajs';
import { loadConfig } from '@pipeline/config';
import {
  deadLetterOf,
  deadLetterReplayMessages,
  deliveryTopicsFor,
  DeliveryMetrics,
  ForwardingDestination,
  FunctionStep,
  runConsumer,
  TenantDirectory,
  vendorClientOptions,
  WebhookForwarder,
  type RunningConsumer,
} from '@pipeline/destinations';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { toOutboxEnvelopes, type TrackingEvent } from '@pipeline/events';
import { createIsolatedVmRuntime, type FunctionRuntime } from '@pipeline/functions';
import {
  createKafka,
  createProducer,
  ensureTopics,
  kafkaConfigSchema,
  readTopicSnapshot,
} from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from '@pipeline/redis';
import {
  ControlPlaneClient,
  TenantChangePublisher,
  TenantChangeSubscriber,
  type TenantRecord,
} from '@pipeline/tenancy';
import {
  startHarness as startControlPlane,
  testDeliveryToken,
  type Harness as ControlPlane,
  type Tenant,
} from '@pipeline/control-plane/testing/harness';
import { waitUntil } from '@pipeline/control-plane/testing/wait';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const logger = createLogger({ service: 'function-replay-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'function-replay-test',
  logger,
});

const v1 = `export function transform(event) {
  if (event.properties?.vip) throw new TypeError('vip customers are not handled yet');
  return { ...event, properties: { ...event.properties, handledBy: 1 } };
}`;
const v2 = `export function transform(event) {
  const tier = event.properties?.vip ? 'vip' : 'standard';
  return { ...event, properties: { ...event.properties, tier, handledBy: 2 } };
}`;

// "Fix, publish, replay" (docs/functions.md, "Failures") end to end: a function published and
// bound through the real control plane (PostgreSQL), looked up by the webhook consumer with its
// own token, run in the real sandbox, on a real Kafka with its retry and dead-letter topics; a
// publish and a rebind reach the consumer through the Redis broadcast.
describe('a function that throws, its fix and the replay (real control plane, Kafka, Redis, sandbox)', () => {
  const prefix = `test.functions.${randomUUID()}.`;
  const { retry, deadLetter } = deliveryTopicsFor('webhook', prefix);
  const topics = { source: `${prefix}tracking.events.v2`, retry: retry.topic, deadLetter: deadLetter.topic };
  let cpRedis: RedisClient;
  let cp: ControlPlane;
  let cpServer: Server;
  let subscriber: TenantChangeSubscriber;
  let directory: TenantDirectory;
  let runtime: FunctionRuntime;
  let hook: LookAlikeServer;
  let producer: Producer;
  let consumer: RunningConsumer;
  let tenant: Tenant;
  let integrationId: string;
  let writeKeyId: string;
  let functionId: string;
  /** Tenant changes the consumer has heard. */
  let heard = 0;

  const api = () => cp.as(tenant.key);
  const deliveries = (event: TrackingEvent) =>
    hook.accepted.filter(({ item }) => item.messageId === event.messageId).map(({ item }) => item);
  const track = (properties: Record<string, unknown>): TrackingEvent =>
    ({
      type: 'track',
      event: 'Order Completed',
      messageId: randomUUID(),
      anonymousId: `anon-${randomUUID()}`,
      timestamp: '2026-11-30T12:00:00.000Z',
      properties,
    }) as TrackingEvent;
  const publishAndBind = async (code: string) => {
    expect((await api().patch(`/api/v1/functions/${functionId}`).send({ code })).status).toBe(200);
    const published = await api().post(`/api/v1/functions/${functionId}/versions`);
    expect(published.status).toBe(201);
    const version = published.body.data as { id: string; version: number };
    const bound = await api()
      .put(`/api/v1/integrations/${integrationId}/function`)
      .send({ functionVersionId: version.id });
    expect(bound.status).toBe(200);
    return version;
  };

  beforeAll(async () => {
    cpRedis = createRedis({ REDIS_URL }, { logger, keyPrefix: 'control-plane:' });
    await cpRedis.connect();
    cp = await startControlPlane('function replay', {
      tenantChanges: new TenantChangePublisher(cpRedis, logger),
    });
    cpServer = createServer(cp.app);
    await new Promise<void>((resolve) => cpServer.listen(0, '127.0.0.1', resolve));
    const cpUrl = `http://127.0.0.1:${(cpServer.address() as AddressInfo).port}`;
    hook = await startLookAlikeVendor('webhook');
    tenant = await cp.tenant();
    const app = async (body: object) => {
      const res = await api().post('/api/v1/apps').send(body);
      expect(res.status).toBe(201);
      return res.body.data.id as string;
    };
    const web = await app({ appType: 'web_tracking', displayName: 'Site' });
    const destination = await app({
      appType: 'webhook',
      displayName: 'Orders hook',
      credentials: { signingSecret: 'function-replay-signing-secret' },
      config: {},
    });
    const integration = await api()
      .post('/api/v1/integrations')
      .send({
        sourceAppId: web,
        destinationAppId: destination,
        dataType: 'events',
        config: { global: {}, tasks: [{ task_type: 'events' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
      });
    expect(integration.status).toBe(201);
    integrationId = integration.body.data.id;
    writeKeyId = (await api().post('/api/v1/write-keys').send({ name: 'site' })).body.data.id;
    const created = await api()
      .post('/api/v1/functions')
      .send({ name: 'orders', kind: 'destination', code: v1 });
    expect(created.status).toBe(201);
    functionId = created.body.data.id;

    await ensureTopics(
      kafka,
      Object.values(topics).map((topic) => ({ topic, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    producer = createProducer(kafka);
    await producer.connect();
    // The consumer's lookups go to the real internal endpoint; only the webhook's address and
    // secret are the look-alike's (a saved app's URL must pass the egress policy, which refuses
    // loopback).
    const client = new ControlPlaneClient(cpUrl, testDeliveryToken('webhook'), logger);
    directory = new TenantDirectory(
      {
        lookup: async (id) => {
          const record = (await client.lookup(id)) as TenantRecord;
          const { appConfig, credentials } = lookAlikeDestination(hook);
          return {
            ...record,
            destinations: record.destinations.map((d) => ({ ...d, appConfig, credentials })),
          };
        },
      },
      { ttlMs: 3_600_000, hearsChanges: () => subscriber.live },
      logger,
    );
    subscriber = TenantChangeSubscriber.start(
      { REDIS_URL },
      (event) => {
        heard += 1;
        directory.invalidate(event);
      },
      logger,
    );
    await waitUntil('the subscription live', async () => subscriber.live);
    runtime = createIsolatedVmRuntime();
    consumer = await runConsumer({
      kafka,
      destination: new ForwardingDestination(
        new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 2000 })),
        directory,
        logger,
        {},
        undefined,
        new FunctionStep(runtime, logger),
      ),
      topics,
      groupId: `test-functions-${randomUUID()}`,
      logger,
      metrics: new DeliveryMetrics(),
      policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 200 },
      unavailableBackoff: { baseDelayMs: 100, maxDelayMs: 500 },
      maxWaitTimeInMs: 100,
    });
    await consumer.joined;
  }, 90_000);

  afterAll(async () => {
    await consumer?.stop();
    await runtime?.close();
    await producer?.disconnect();
    await subscriber?.stop();
    await hook?.close();
    await new Promise<void>((resolve) => (cpServer ? cpServer.close(() => resolve()) : resolve()));
    await cp?.close();
    await cpRedis?.quit();
  });

  it('dead-letters what version 1 throws on, with its version; after a fixed version 2 the replay delivers each once', async () => {
    const first = await publishAndBind(v1);
    expect(first.version).toBe(1);
    const vipA = track({ vip: true, total: 10 });
    const plain = track({ total: 5 });
    const vipB = track({ vip: true, total: 20 });
    const envelope = {
      v: 2 as const,
      accountId: tenant.accountId,
      writeKeyId,
      batchId: randomUUID(),
      receivedAt: new Date().toISOString(),
      ip: null,
      userAgent: null,
    };
    await producer.send({
      topic: topics.source,
      acks: -1,
      messages: toOutboxEnvelopes(envelope, [vipA, plain, vipB]).map(({ json }) => ({
        key: `${tenant.accountId}:x`,
        value: json,
      })),
    });

    await waitUntil('the plain event delivered', async () => deliveries(plain).length === 1);
    const deadLetters = async () => (await readTopicSnapshot(kafka, topics.deadLetter)).map(deadLetterOf);
    await waitUntil('the two vip events dead-lettered', async () => (await deadLetters()).length >= 1);
    const letters = await deadLetters();
    expect(letters).toHaveLength(1);
    const [letter] = letters;
    expect(letter?.reason).toBe(
      `function_error: function ${functionId} version 1: TypeError: vip customers are not handled yet`,
    );
    expect(letter?.permanent).toBe(true);
    expect(JSON.parse(letter?.value?.toString('utf8') ?? '{}').events).toEqual([vipA, vipB]);
    expect(deliveries(plain)[0]?.properties).toMatchObject({ total: 5, handledBy: 1 });
    expect([vipA, vipB].map((e) => deliveries(e).length)).toEqual([0, 0]);

    // The fix: a new version, bound; the broadcast drops the consumer's cached tenant.
    const heardBefore = heard;
    const fixed = await publishAndBind(v2);
    expect(fixed.version).toBe(2);
    await waitUntil('the rebinding heard', async () => heard > heardBefore);
    await producer.send({ ...deadLetterReplayMessages('webhook', letters, prefix), acks: -1 });

    await waitUntil(
      'both vip events delivered',
      async () => deliveries(vipA).length + deliveries(vipB).length >= 2,
    );
    expect(deliveries(vipA).map((e) => e.properties)).toEqual([
      { vip: true, total: 10, tier: 'vip', handledBy: 2 },
    ]);
    expect(deliveries(vipB).map((e) => e.properties)).toEqual([
      { vip: true, total: 20, tier: 'vip', handledBy: 2 },
    ]);
    expect(deliveries(plain)).toHaveLength(1);
    // Nothing dead-lettered again.
    expect(await deadLetters()).toHaveLength(1);
  }, 90_000);
});
