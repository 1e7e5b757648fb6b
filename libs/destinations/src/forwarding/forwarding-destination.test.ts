import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { outboxKey, toOutboxEnvelopes, type TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import type { TenantRecord } from '@pipeline/tenancy';
import { runConsumer, type RunningConsumer } from '../consumer-runner';
import { DeliveryMetrics } from '../delivery-metrics';
import { TenantDirectory } from '../tenant-directory';
import { topicRecords, waitFor } from '../testing/topic-records';
import { AmplitudeForwarder } from './vendors/amplitude/amplitude-forwarder';
import { vendorClientOptions, type ForwarderOptions } from './forwarder';
import { WebhookForwarder } from './vendors/webhook/webhook-forwarder';
import { ForwardingDestination } from './forwarding-destination';
import { lookAlikeDestination, startLookAlikeVendor, type LookAlikeServer } from './testing/vendor-server';

// The forwarding kinds end to end on the real broker: outbox -> consumer group per kind ->
// vendor look-alike servers, with the retry and dead-letter topics of each kind.
const logger = createLogger({ service: 'forwarding-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'forwarding-test',
  logger,
});

describe('forwarding destinations (real Kafka, look-alike vendors)', () => {
  const run = randomUUID();
  const outbox = `test.forwarding.${run}`;
  const topicsOf = (kind: string) => ({
    source: outbox,
    retry: `${outbox}.${kind}.retry`,
    deadLetter: `${outbox}.${kind}.dead-letter`,
  });
  let amplitude: LookAlikeServer;
  let webhook: LookAlikeServer;
  let tenant: TenantRecord;
  const lookups: string[] = [];
  const running: RunningConsumer[] = [];
  const metrics = new DeliveryMetrics();

  const event = (over: Partial<TrackingEvent> = {}): TrackingEvent =>
    ({
      type: 'track',
      event: 'Order Completed',
      messageId: randomUUID(),
      anonymousId: 'anon-1',
      userId: 'user-1',
      timestamp: '2026-03-01T10:00:00.000Z',
      properties: { total: 12.5 },
      ...over,
    }) as TrackingEvent;
  const granted = event();
  const analyticsDenied = event({ context: { consent: { analytics: false, marketing: true } } });
  const identify = event({ type: 'identify', traits: { plan: 'pro' } } as Partial<TrackingEvent>);
  // Segment's integrations object: only Amplitude, and everything but Amplitude.
  const amplitudeOnly = event({ integrations: { All: false, Amplitude: true } });
  const notAmplitude = event({ integrations: { Amplitude: false } });

  const start = async (kind: 'amplitude' | 'webhook') => {
    const tenants = new TenantDirectory(
      {
        lookup: async (writeKeyId) => {
          lookups.push(writeKeyId);
          return writeKeyId === tenant.writeKeyId ? tenant : null;
        },
      },
      { ttlMs: 60_000 },
      logger,
    );
    const options: ForwarderOptions = { allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 2000 };
    const forwarder =
      kind === 'amplitude'
        ? new AmplitudeForwarder(vendorClientOptions(options, amplitude.url))
        : new WebhookForwarder(vendorClientOptions(options));
    running.push(
      await runConsumer({
        kafka,
        destination: new ForwardingDestination(forwarder, tenants, logger),
        topics: topicsOf(kind),
        groupId: `test-${kind}-${run}`,
        logger,
        metrics,
        policy: { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 500 },
        maxWaitTimeInMs: 100,
      }),
    );
  };

  beforeAll(async () => {
    amplitude = await startLookAlikeVendor('amplitude');
    webhook = await startLookAlikeVendor('webhook');
    const accountId = randomUUID();
    tenant = {
      accountId,
      writeKeyId: randomUUID(),
      status: 'active',
      allowedOrigins: [],
      destinations: [lookAlikeDestination(amplitude), lookAlikeDestination(webhook)],
      warehouse: null,
    };
    await ensureTopics(
      kafka,
      [outbox, ...['amplitude', 'webhook'].flatMap((k) => [topicsOf(k).retry, topicsOf(k).deadLetter])].map(
        (topic) => ({ topic, numPartitions: 2 }),
      ),
      { replicationFactor: 1, logger },
    );
    const producer = createProducer(kafka);
    await producer.connect();
    const receipt = {
      v: 2 as const,
      accountId,
      writeKeyId: tenant.writeKeyId,
      batchId: 'b',
      receivedAt: '2026-03-01T10:00:05.000Z',
      ip: '203.0.113.1',
      userAgent: 'UA',
    };
    const records = toOutboxEnvelopes(receipt, [
      granted,
      analyticsDenied,
      identify,
      amplitudeOnly,
      notAmplitude,
    ]);
    await producer.send({
      topic: outbox,
      acks: -1,
      messages: records.map(({ envelope, json }) => ({ key: outboxKey(envelope), value: json })),
    });
    await producer.disconnect();
  });

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await amplitude.close();
    await webhook.close();
  });

  it('delivers to one vendor after a 429 with Retry-After while another fails permanently into its dead-letter topic, filtering by consent and by each event’s integrations', async () => {
    amplitude.failNext({ status: 429, retryAfter: '1' });
    webhook.failNext({ status: 400, body: { error: 'bad payload' } }, 100);
    await start('amplitude');
    await start('webhook');

    // Amplitude: the consent-denied event and the one that turned Amplitude off are withheld;
    // the others, the Amplitude-only one included, arrive after the 429.
    await waitFor(() => amplitude.accepted.length >= 3, 30_000, 'amplitude deliveries');
    const insertIds = amplitude.accepted.map((a) => a.item.insert_id);
    expect(insertIds.sort()).toEqual([granted.messageId, identify.messageId, amplitudeOnly.messageId].sort());
    expect(insertIds).not.toContain(analyticsDenied.messageId);
    expect(insertIds).not.toContain(notAmplitude.messageId);
    const first429 = amplitude.requests.find((r) => r.status === 429)!;
    expect(first429).toBeDefined();

    // Webhook (no consent gate): every event but the Amplitude-only one, dead-lettered at once
    // with the vendor's reason.
    await waitFor(
      async () => (await topicRecords(kafka, topicsOf('webhook').deadLetter)).length >= 1,
      30_000,
      'the webhook dead letter',
    );
    const [letter] = await topicRecords(kafka, topicsOf('webhook').deadLetter);
    expect(letter!.headers).toMatchObject({
      'x-delivery-target': 'int-webhook',
      'x-delivery-permanent': 'true',
      'x-delivery-attempt': '1',
    });
    expect(letter!.headers['x-delivery-reason']).toMatch(/400/);
    expect(
      JSON.parse(letter!.value)
        .events.map((e: TrackingEvent) => e.messageId)
        .sort(),
    ).toEqual(
      [granted.messageId, analyticsDenied.messageId, identify.messageId, notAmplitude.messageId].sort(),
    );
    // The amplitude retry went through its own retry topic, once.
    const retries = await topicRecords(kafka, topicsOf('amplitude').retry);
    expect(retries).toHaveLength(1);
    expect(retries[0]!.headers['x-delivery-target']).toBe('int-amplitude');
    expect(await topicRecords(kafka, topicsOf('amplitude').deadLetter)).toHaveLength(0);

    const text = await metrics.text();
    expect(text).toMatch(/pipeline_delivery_events_delivered_total\{destination="amplitude"\} 3/);
    expect(text).toMatch(/pipeline_delivery_events_consent_skipped_total\{destination="amplitude"\} 1/);
    expect(text).toMatch(/pipeline_delivery_records_retried_total\{destination="amplitude"\} 1/);
    expect(text).toMatch(
      /pipeline_delivery_records_dead_lettered_total\{destination="webhook",reason="http_400"\} 1/,
    );
    // Tenants came from the directory by write key id, cached.
    expect(new Set(lookups)).toEqual(new Set([tenant.writeKeyId]));
  });
});
