import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { forwarderFor } from '@pipeline/catalog';
import { loadConfig } from '@pipeline/config';
import {
  createDestination,
  runConsumer,
  TenantDirectory,
  type RunningConsumer,
} from '@pipeline/destinations';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  waitFor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import {
  outboxKey,
  toOutboxEnvelopes,
  type EnvelopePlan,
  type PlanVerdict,
  type TrackingEvent,
} from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import {
  createRedis,
  debuggerKeys,
  DebugStreamWriter,
  type DeliveryOutcomeRecord,
  type RedisClient,
} from '@pipeline/redis';
import type { TenantRecord } from '@pipeline/tenancy';
import { RedisOutcomeRecorder } from './redis-outcome-recorder';

const logger = createLogger({ service: 'outcomes-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), { clientId: 'outcomes-test', logger });

const event = (name: string, extra: Partial<TrackingEvent> = {}): TrackingEvent => ({
  type: 'track',
  event: name,
  messageId: randomUUID(),
  anonymousId: 'anon',
  userId: 'user-1',
  timestamp: '2026-03-01T10:00:00.000Z',
  properties: {},
  ...extra,
});

// The consumers tell the live debugger where each event went: real Kafka, PostgreSQL
// warehouse, Redis and look-alike vendors.
describe('delivery outcomes for the debugger', () => {
  const run = randomUUID();
  const outbox = `test.outcomes.${run}`;
  const topicsOf = (kind: string) => ({
    source: outbox,
    retry: `${outbox}.${kind}.retry`,
    deadLetter: `${outbox}.${kind}.dead-letter`,
  });
  const writeKeyId = randomUUID();
  const kinds = ['warehouse', 'amplitude', 'webhook', 'meta_conversions'];
  const accountId = randomUUID();
  let redis: RedisClient;
  let db: ScratchDatabase;
  let amplitude: LookAlikeServer;
  let flaky: LookAlikeServer;
  let refusing: LookAlikeServer;
  let meta: LookAlikeServer;
  const running: RunningConsumer[] = [];
  /** Read before any consumer starts: no outcome of this suite is older. */
  let recordingFrom: number;
  const consenting = event('Consenting');
  const refusingConsent = event('No analytics', { context: { consent: { analytics: false } } });

  beforeAll(async () => {
    recordingFrom = Date.now();
    redis = createRedis({ REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' }, { logger });
    await redis.connect();
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'delivery outcomes');
    [amplitude, flaky, refusing, meta] = await Promise.all([
      startLookAlikeVendor('amplitude'),
      startLookAlikeVendor('webhook'),
      startLookAlikeVendor('webhook'),
      startLookAlikeVendor('meta_conversions'),
    ]);
    // One webhook answers 503 once (retried, then delivered), the other 400 (dead-lettered).
    flaky.failNext({ status: 503 }, 1);
    refusing.failNext({ status: 400 }, 100);
    const tenant: TenantRecord = {
      accountId,
      writeKeyId,
      status: 'active',
      allowedOrigins: [],
      destinations: [
        { ...lookAlikeDestination(amplitude), integrationId: 'int-amp' },
        { ...lookAlikeDestination(flaky), integrationId: 'int-hook-flaky' },
        { ...lookAlikeDestination(refusing), integrationId: 'int-hook-refusing' },
        // The events are months old: Meta's client skips them (too_old) without a request.
        { ...lookAlikeDestination(meta), integrationId: 'int-meta' },
      ],
      warehouse: { kind: 'warehouse', warehouseId: 'unused', engine: 'postgres', schema: 'unused', epoch: 1 },
    };
    const tenants = new TenantDirectory(
      { lookup: (id) => Promise.resolve(id === writeKeyId ? tenant : null) },
      { ttlMs: 60_000 },
      logger,
    );
    await ensureTopics(
      kafka,
      [outbox, ...kinds.flatMap((k) => [topicsOf(k).retry, topicsOf(k).deadLetter])].map((topic) => ({
        topic,
        numPartitions: 1,
      })),
      { replicationFactor: 1, logger },
    );
    const outcomes = new RedisOutcomeRecorder(
      new DebugStreamWriter(redis, { maxLen: 1000, ttlSeconds: 600, maxPerSecond: 1000 }, logger),
    );
    for (const kind of kinds) {
      running.push(
        await runConsumer({
          kafka,
          destination: createDestination(kind, {
            logger,
            warehouseUrl: db.url,
            tenants,
            outcomes,
            forwarder: forwarderFor(kind, {
              baseUrls: { amplitude: amplitude.url, meta_conversions: meta.url },
              fetch: globalThis.fetch,
            }),
          }),
          topics: topicsOf(kind),
          groupId: `${outbox}.${kind}`,
          logger,
          maxWaitTimeInMs: 100,
          outcomes,
          policy: { maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 100 },
        }),
      );
    }
    await Promise.all(running.map((consumer) => consumer.joined));
    await produce([consenting, refusingConsent]);
  }, 60_000);

  /** One outbox record of `events` (with their plan and verdicts, when given) on the outbox topic. */
  async function produce(
    events: TrackingEvent[],
    planned?: { plan: EnvelopePlan; verdicts: PlanVerdict[] },
  ): Promise<void> {
    const producer = createProducer(kafka);
    await producer.connect();
    const receipt = {
      v: 2 as const,
      accountId,
      writeKeyId,
      batchId: randomUUID(),
      receivedAt: '2026-03-01T10:00:05.000Z',
      ip: null,
      userAgent: null,
      ...(planned ? { plan: planned.plan } : {}),
    };
    await producer.send({
      topic: outbox,
      acks: -1,
      messages: toOutboxEnvelopes(receipt, events, Infinity, planned?.verdicts).map(({ envelope, json }) => ({
        key: outboxKey(envelope),
        value: json,
      })),
    });
    await producer.disconnect();
  }

  afterAll(async () => {
    await Promise.all(running.map((consumer) => consumer.stop()));
    await Promise.all([amplitude, flaky, refusing, meta].map((server) => server.close()));
    await redis.del(debuggerKeys.outcomes(writeKeyId));
    redis.disconnect();
    await db.drop();
  });

  /** The message's outcomes as the control plane reads them: entries of the stream with its messageId. */
  async function outcomesOf(messageId: string): Promise<Omit<DeliveryOutcomeRecord, 'at'>[]> {
    const entries = (await redis.xrange(debuggerKeys.outcomes(writeKeyId), '-', '+')) as [string, string[]][];
    return entries
      .filter(([, fields]) => fields[1] === messageId)
      .map(([, fields]) => {
        const { at, ...rest } = JSON.parse(fields[3] as string) as DeliveryOutcomeRecord;
        // Recorded while this suite ran: between its start and this read.
        expect(Date.parse(at)).toBeGreaterThanOrEqual(recordingFrom);
        expect(Date.parse(at)).toBeLessThanOrEqual(Date.now());
        return rest;
      });
  }

  const sorted = <T>(items: T[]) =>
    [...items].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));

  it('records stored, delivered, consent_skipped, skipped, retried and dead_lettered per destination and integration', async () => {
    const skipped = {
      destination: 'meta_conversions',
      integrationId: 'int-meta',
      outcome: 'skipped',
      reason: 'too_old: the Conversions API refuses events more than 7 days old',
    };
    const expectedFor = (messageId: string) =>
      messageId === consenting.messageId
        ? [
            skipped,
            { destination: 'warehouse', integrationId: null, outcome: 'stored', reason: null },
            { destination: 'amplitude', integrationId: 'int-amp', outcome: 'delivered', reason: null },
          ]
        : [
            skipped,
            { destination: 'warehouse', integrationId: null, outcome: 'stored', reason: null },
            {
              destination: 'amplitude',
              integrationId: 'int-amp',
              outcome: 'consent_skipped',
              reason: 'consent denies the product_analytics category',
            },
          ];
    for (const { messageId } of [consenting, refusingConsent]) {
      // Both events went to both webhooks: retried then delivered at one, dead-lettered at the other.
      let seen: Omit<DeliveryOutcomeRecord, 'at'>[] = [];
      await waitFor(
        async () => {
          seen = await outcomesOf(messageId);
          return seen.length >= 6;
        },
        30_000,
        `six outcomes of ${messageId}`,
      );
      const webhook = seen.filter((o) => o.destination === 'webhook');
      expect(sorted(seen.filter((o) => o.destination !== 'webhook'))).toEqual(sorted(expectedFor(messageId)));
      expect(webhook.filter((o) => o.integrationId === 'int-hook-flaky').map((o) => o.outcome)).toEqual([
        'retried',
        'delivered',
      ]);
      expect(webhook.find((o) => o.outcome === 'retried')?.reason).toMatch(/^http_503/);
      const dead = webhook.filter((o) => o.integrationId === 'int-hook-refusing');
      expect(dead.map((o) => o.outcome)).toEqual(['dead_lettered']);
      expect(dead[0]?.reason).toMatch(/^http_400/);
    }
    expect(amplitude.accepted).toHaveLength(1);
    expect(meta.requests).toHaveLength(0);
  }, 60_000);

  it('records a plan’s quarantine as quarantined with the violation codes, and the values omit stripped', async () => {
    // Unplanned properties are stripped everywhere; a missing one keeps the event from Amplitude only.
    const plan: EnvelopePlan = {
      planId: 'plan-outcomes',
      version: 2,
      policy: {
        actions: { unplanned_property: 'omit' },
        destinations: { 'int-amp': { missing_required: 'quarantine' } },
      },
    };
    const violation = (code: 'unplanned_property' | 'missing_required', path: string) => ({
      code,
      path,
      keyword: code === 'missing_required' ? 'required' : 'additionalProperties',
      message: `${path} ${code}`,
    });
    const stripped = event('Order Completed', { properties: { order_id: 'o-1', coupon: 'FREE' } });
    const keptOut = event('Order Completed', { properties: { coupon: 'FREE' } });
    await produce([stripped, keptOut], {
      plan,
      verdicts: [
        { version: 2, violations: [violation('unplanned_property', '/properties/coupon')] },
        {
          version: 2,
          violations: [
            violation('missing_required', '/properties/order_id'),
            violation('unplanned_property', '/properties/coupon'),
          ],
        },
      ],
    });
    const atWarehouseAndAmplitude = async (messageId: string) => {
      let seen: Omit<DeliveryOutcomeRecord, 'at'>[] = [];
      await waitFor(
        async () => {
          seen = (await outcomesOf(messageId)).filter((o) =>
            ['warehouse', 'amplitude'].includes(o.destination),
          );
          return seen.length >= 2;
        },
        30_000,
        `the warehouse's and Amplitude's outcomes of ${messageId}`,
      );
      return sorted(seen);
    };
    const omitted = ['/properties/coupon'];
    expect(await atWarehouseAndAmplitude(stripped.messageId)).toEqual([
      { destination: 'amplitude', integrationId: 'int-amp', outcome: 'delivered', reason: null, omitted },
      { destination: 'warehouse', integrationId: null, outcome: 'stored', reason: null, omitted },
    ]);
    expect(await atWarehouseAndAmplitude(keptOut.messageId)).toEqual([
      {
        destination: 'amplitude',
        integrationId: 'int-amp',
        outcome: 'quarantined',
        reason: 'missing_required,unplanned_property',
      },
      { destination: 'warehouse', integrationId: null, outcome: 'stored', reason: null, omitted },
    ]);
    // Amplitude got the stripped event only, without the coupon.
    const sent = JSON.stringify(amplitude.accepted.slice(1));
    expect(sent).toContain(stripped.messageId);
    expect(sent).not.toContain(keptOut.messageId);
    expect(sent).not.toContain('FREE');
  }, 60_000);
});
