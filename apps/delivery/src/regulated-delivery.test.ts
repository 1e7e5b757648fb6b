import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import type { Producer } from 'kafkajs';
import { loadConfig } from '@pipeline/config';
import {
  deadLetterReplayMessages,
  deliveryHeaders,
  deliveryTopicsFor,
  DeliveryMetrics,
  ForwardingDestination,
  retryGroupFor,
  runConsumer,
  TenantDirectory,
  vendorClientOptions,
  WebhookForwarder,
  type RunningConsumer,
} from '@pipeline/destinations';
import {
  lookAlikeDestination,
  parsePrometheusText,
  sampleSum,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { toOutboxEnvelopes, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from '@pipeline/redis';
import {
  ControlPlaneClient,
  RegulatedSubjectsCache,
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
const logger = createLogger({ service: 'regulated-delivery-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'regulated-delivery-test',
  logger,
});

/** The control plane's app on a port it keeps while it is taken down and brought back. */
async function serve(app: ControlPlane['app']) {
  const server: Server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    down: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    up: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
}

const track = (userId: string): TrackingEvent =>
  ({
    type: 'track',
    event: 'Clicked',
    userId,
    messageId: `${userId}:${randomUUID()}`,
    timestamp: '2026-11-29T12:00:00.000Z',
  }) as TrackingEvent;

// Regulated subjects in every delivery attempt (docs/delivery-and-destinations.md, "Regulated
// subjects"): a real control plane on PostgreSQL answers the regulations API and broadcasts on a
// real Redis; a webhook consumer on a real Kafka reads the outbox and its retry topic (where a
// replayed dead letter comes back) and sends to the webhook look-alike.
describe('regulated subjects in delivery (real control plane, PostgreSQL, Redis, Kafka)', () => {
  const prefix = `test.regulated.${randomUUID()}.`;
  const { retry, deadLetter } = deliveryTopicsFor('webhook', prefix);
  const topics = { source: `${prefix}tracking.events.v2`, retry: retry.topic, deadLetter: deadLetter.topic };
  const groupId = `test-regulated-${randomUUID()}`;
  const metrics = new DeliveryMetrics();
  let cpRedis: RedisClient;
  let cp: ControlPlane;
  let cpServer: Awaited<ReturnType<typeof serve>>;
  let subscriber: TenantChangeSubscriber;
  let regulations: RegulatedSubjectsCache;
  let hook: LookAlikeServer;
  let producer: Producer;
  let consumer: RunningConsumer;
  let a: Tenant;
  let b: Tenant;
  const tenants = new Map<string, TenantRecord>();

  const envelopeOf = (
    tenant: Tenant,
    receivedAt = new Date().toISOString(),
  ): Omit<OutboxEnvelope, 'events'> => ({
    v: 2,
    accountId: tenant.accountId,
    writeKeyId: `wk-${tenant.accountId}`,
    batchId: randomUUID(),
    receivedAt,
    ip: null,
    userAgent: null,
  });
  /** An outbox record as ingestion writes it (outbox-messages.ts), its account in a header. */
  const toOutbox = (tenant: Tenant, events: TrackingEvent[], receivedAt?: string) =>
    producer.send({
      topic: topics.source,
      acks: -1,
      messages: toOutboxEnvelopes(envelopeOf(tenant, receivedAt), events).map(({ envelope, json }) => ({
        key: `${envelope.accountId}:${envelope.events[0]?.userId ?? ''}`,
        value: json,
        headers: { 'account-id': envelope.accountId, 'batch-id': envelope.batchId },
      })),
    });
  const valueOf = (tenant: Tenant, events: TrackingEvent[]) =>
    (toOutboxEnvelopes(envelopeOf(tenant), events)[0] as { json: string }).json;
  const delivered = (event: TrackingEvent) =>
    hook.accepted.some(({ item }) => item.messageId === event.messageId);
  const regulated = async (reason: string) =>
    sampleSum(parsePrometheusText(await metrics.text()), 'pipeline_delivery_events_regulated_total', {
      destination: 'webhook',
      reason,
    });
  const committed = async (group: string, topic: string) => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const [result] = await admin.fetchOffsets({ groupId: group, topics: [topic] });
      return (result?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
    } finally {
      await admin.disconnect();
    }
  };
  /** Records written to a topic so far. */
  const written = async (topic: string) => {
    const admin = kafka.admin();
    await admin.connect();
    try {
      return (await admin.fetchTopicOffsets(topic)).reduce((sum, p) => sum + Number(p.high), 0);
    } finally {
      await admin.disconnect();
    }
  };
  const regulate = async (tenant: Tenant, regulationType: string, subjectIds: string[]) => {
    const res = await cp
      .as(tenant.key)
      .post('/api/v1/regulations')
      .send({ regulationType, subjectType: 'USER_ID', subjectIds });
    expect(res.status).toBe(200);
    return res.body.data.regulation as { id: string; cutoff: string | null };
  };

  beforeAll(async () => {
    cpRedis = createRedis({ REDIS_URL }, { logger, keyPrefix: 'control-plane:' });
    await cpRedis.connect();
    cp = await startControlPlane('regulated delivery', {
      tenantChanges: new TenantChangePublisher(cpRedis, logger),
    });
    cpServer = await serve(cp.app);
    a = await cp.tenant();
    b = await cp.tenant();
    hook = await startLookAlikeVendor('webhook');
    for (const tenant of [a, b])
      tenants.set(`wk-${tenant.accountId}`, {
        accountId: tenant.accountId,
        writeKeyId: `wk-${tenant.accountId}`,
        status: 'active',
        allowedOrigins: [],
        destinations: [lookAlikeDestination(hook)],
        warehouse: null,
      });
    await ensureTopics(
      kafka,
      Object.values(topics).map((topic) => ({ topic, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    producer = createProducer(kafka);
    await producer.connect();
    // As composition.ts wires the consumer: its own token, the cache dropped on each change.
    regulations = new RegulatedSubjectsCache(
      new ControlPlaneClient(cpServer.url, testDeliveryToken('webhook'), logger),
      { ttlMs: 3_600_000, hearsChanges: () => subscriber.live },
      logger,
    );
    subscriber = TenantChangeSubscriber.start(
      { REDIS_URL },
      (event) => regulations.invalidate(event),
      logger,
    );
    await waitUntil('the subscription live', async () => subscriber.live);
  }, 60_000);

  afterAll(async () => {
    await consumer?.stop();
    await producer?.disconnect();
    await subscriber?.stop();
    await hook?.close();
    await cpServer?.down();
    await cp?.close();
    await cpRedis?.quit();
  });

  const start = async () => {
    consumer = await runConsumer({
      kafka,
      destination: new ForwardingDestination(
        new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 2000 })),
        new TenantDirectory(
          { lookup: (writeKeyId) => Promise.resolve(tenants.get(writeKeyId) ?? null) },
          { ttlMs: 60_000 },
          logger,
        ),
        logger,
      ),
      topics,
      groupId,
      logger,
      metrics,
      regulations,
      policy: { maxAttempts: 5, baseDelayMs: 50, maxDelayMs: 200 },
      unavailableBackoff: { baseDelayMs: 100, maxDelayMs: 500 },
      maxWaitTimeInMs: 100,
    });
    await consumer.joined;
  };

  it('drops a SUPPRESS_WITH_DELETE subject waiting in the outbox, the retry topic and a replayed dead letter', async () => {
    const x = `x-${randomUUID()}`;
    const y = `y-${randomUUID()}`;
    const x1 = track(x);
    const y1 = track(y);
    const x2 = track(x);
    const x3 = track(x);
    const y3 = track(y);
    const x4 = track(x);
    await toOutbox(a, [x1, y1]);
    await toOutbox(a, [x2]);
    // A record parked for another attempt (no account header, as park() writes it), and a dead
    // letter replayed into the retry topic as the control plane and the CLI replay them.
    await producer.send({
      topic: topics.retry,
      acks: -1,
      messages: [
        {
          key: `${a.accountId}:${x}`,
          value: valueOf(a, [x3, y3]),
          headers: {
            [deliveryHeaders.destination]: 'webhook',
            [deliveryHeaders.target]: 'int-webhook',
            [deliveryHeaders.attempt]: '1',
            [deliveryHeaders.nextAttemptAt]: String(Date.now()),
            [deliveryHeaders.reason]: 'vendor answered 503',
          },
        },
      ],
    });
    const replay = deadLetterReplayMessages(
      'webhook',
      [
        {
          partition: 0,
          offset: '7',
          key: `${a.accountId}:${x}`,
          value: Buffer.from(valueOf(a, [x4])),
          target: 'int-webhook',
          reason: 'vendor answered 400',
          origin: `${topics.source}/0/99`,
        },
      ],
      prefix,
    );
    expect(replay.topic).toBe(topics.retry);
    await producer.send({ ...replay, acks: -1 });

    await regulate(a, 'SUPPRESS_WITH_DELETE', [x]);
    await start();

    await waitUntil(
      'y delivered from the outbox and the retry topic',
      async () => delivered(y1) && delivered(y3),
    );
    await waitUntil(
      'every record committed',
      async () =>
        (await committed(groupId, topics.source)) === 2 &&
        (await committed(retryGroupFor(groupId), topics.retry)) === 2,
    );
    expect([x1, x2, x3, x4].filter(delivered)).toEqual([]);
    expect(await regulated('suppressed')).toBe(4);
    expect(await regulated('deleted')).toBe(0);
    // Nothing of x parked again either.
    expect(await written(topics.deadLetter)).toBe(0);
    expect(await written(topics.retry)).toBe(2);
  }, 90_000);

  it('drops what was received at or before a DELETE_ONLY cut-off and delivers what came after, once the change is heard', async () => {
    const z = `z-${randomUUID()}`;
    // A's subjects are cached by now: only the broadcast makes the consumer ask again.
    expect(regulations.peek(a.accountId)).toBeDefined();
    const { cutoff } = await regulate(a, 'DELETE_ONLY', [z]);
    expect(cutoff).not.toBeNull();
    const cutoffMs = Date.parse(cutoff as string);
    await waitUntil('the change heard', async () => regulations.peek(a.accountId) === undefined);
    const before = track(z);
    const after = track(z);
    const outboxBefore = await committed(groupId, topics.source);
    await toOutbox(a, [before], new Date(cutoffMs - 1000).toISOString());
    await toOutbox(a, [after], new Date(cutoffMs + 1).toISOString());
    await waitUntil('the event after the cut-off delivered', async () => delivered(after));
    await waitUntil(
      'both committed',
      async () => (await committed(groupId, topics.source)) === outboxBefore + 2,
    );
    expect(delivered(before)).toBe(false);
    expect(await regulated('deleted')).toBe(1);
  }, 60_000);

  it('holds a batch while the control plane is down: not delivered, not committed; delivered once it is back', async () => {
    const w = track(`w-${randomUUID()}`);
    const outboxBefore = await committed(groupId, topics.source);
    await cpServer.down();
    try {
      // B's subjects were never asked: nothing cached may stand in for them.
      await toOutbox(b, [w]);
      await waitUntil('the batch held', async () => consumer.unavailableSince() !== undefined, 20_000);
      // Held across several attempts: still neither delivered nor committed.
      const heldSince = consumer.unavailableSince();
      await waitUntil('held for a while', async () => Date.now() - (heldSince?.getTime() ?? 0) > 1000);
      expect(delivered(w)).toBe(false);
      expect(await committed(groupId, topics.source)).toBe(outboxBefore);
      expect(await written(topics.deadLetter)).toBe(0);
    } finally {
      await cpServer.up();
    }
    await waitUntil('delivered once the control plane is back', async () => delivered(w), 30_000);
    await waitUntil('committed', async () => (await committed(groupId, topics.source)) === outboxBefore + 1);
    expect(consumer.unavailableSince()).toBeUndefined();
  }, 60_000);
});
