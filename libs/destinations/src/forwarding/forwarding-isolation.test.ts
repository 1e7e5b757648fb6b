import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { outboxKey, toOutboxEnvelopes, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import type { ResolvedDestination, TenantRecord } from '@pipeline/tenancy';
import { runConsumer, type RunningConsumer } from '../consumer-runner';
import type { DeliveryMessage } from '../destination';
import { TenantDirectory } from '../tenant-directory';
import { topicRecords, waitFor } from '../testing/topic-records';
import { AmplitudeForwarder } from './vendors/amplitude/amplitude-forwarder';
import { vendorClientOptions, type ForwarderOptions } from './forwarder';
import { WebhookForwarder } from './vendors/webhook/webhook-forwarder';
import { ForwardingDestination, type ForwardingLimits } from './forwarding-destination';
import { lookAlikeDestination, startLookAlikeVendor, type LookAlikeServer } from './testing/vendor-server';

// One tenant's slow or failing destination must not hold back another's: heartbeats during
// long sends, time budgets, a cap on 413 splitting, a circuit breaker per integration, and
// integrations of a batch sent side by side.
const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk: Buffer) => logLines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
const logger = createLogger({ service: 'forwarding-isolation-test', format: 'json', stream: logStream });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'forwarding-isolation',
  logger,
});

const event = (name: string): TrackingEvent => ({
  type: 'track',
  event: name,
  messageId: randomUUID(),
  anonymousId: 'anon',
  userId: 'user',
  timestamp: '2026-03-01T10:00:00.000Z',
  properties: {},
});

const tenantOf = (destinations: ResolvedDestination[]): TenantRecord => ({
  accountId: randomUUID(),
  writeKeyId: randomUUID(),
  status: 'active',
  allowedOrigins: [],
  destinations,
  warehouse: null,
});

const directoryOf = (tenants: TenantRecord[]) =>
  new TenantDirectory(
    { lookup: (writeKeyId) => Promise.resolve(tenants.find((t) => t.writeKeyId === writeKeyId) ?? null) },
    { ttlMs: 60_000 },
    logger,
  );

const envelopeOf = (tenant: TenantRecord, events: TrackingEvent[]): OutboxEnvelope => ({
  v: 2,
  accountId: tenant.accountId,
  writeKeyId: tenant.writeKeyId,
  batchId: randomUUID(),
  receivedAt: '2026-03-01T10:00:05.000Z',
  ip: null,
  userAgent: null,
  events,
});

describe('tenants are isolated in forwarding (real Kafka, look-alike vendors)', () => {
  const run = randomUUID();
  const outbox = `test.isolation.${run}`;
  const topicsOf = (kind: string) => ({
    source: outbox,
    retry: `${outbox}.${kind}.retry`,
    deadLetter: `${outbox}.${kind}.dead-letter`,
  });
  let slow: LookAlikeServer;
  let storm: LookAlikeServer;
  let fast: LookAlikeServer;
  let amplitude: LookAlikeServer;
  const running: RunningConsumer[] = [];
  const slowEvents = [event('slow 1'), event('slow 2')];
  const stormEvents = Array.from({ length: 40 }, (_, i) => event(`storm ${i}`));
  const fastEvents = [event('fast 1'), event('fast 2'), event('fast 3')];
  const maxSplitRequests = 8;
  // Set when A's receiver has answered: B must be delivered before that.
  let slowAnswered = false;

  beforeAll(async () => {
    [slow, storm, fast, amplitude] = await Promise.all([
      startLookAlikeVendor('webhook'),
      startLookAlikeVendor('webhook'),
      startLookAlikeVendor('webhook'),
      startLookAlikeVendor('amplitude'),
    ]);
    // Account A's receiver answers after 9 s, longer than the group's 6 s session timeout;
    // account C's answers 413 to everything.
    slow.delayNext(9000, 10);
    storm.failNext({ status: 413 }, 1000);
    const a = tenantOf([{ ...lookAlikeDestination(slow), integrationId: 'int-a-webhook' }]);
    const c = tenantOf([{ ...lookAlikeDestination(storm), integrationId: 'int-c-webhook' }]);
    const b = tenantOf([
      { ...lookAlikeDestination(fast), integrationId: 'int-b-webhook' },
      { ...lookAlikeDestination(amplitude), integrationId: 'int-b-amplitude' },
    ]);
    await ensureTopics(
      kafka,
      [outbox, ...['webhook', 'amplitude'].flatMap((k) => [topicsOf(k).retry, topicsOf(k).deadLetter])].map(
        (topic) => ({ topic, numPartitions: 1 }),
      ),
      { replicationFactor: 1, logger },
    );
    const tenants = directoryOf([a, b, c]);
    const limits: Partial<ForwardingLimits> = { integrationBudgetMs: 15_000, concurrency: 4 };
    for (const kind of ['webhook', 'amplitude'] as const) {
      const options: ForwarderOptions = {
        fetch: async (url, init) => {
          const response = await fetch(url, init);
          if (String(url).startsWith(slow.url)) slowAnswered = true;
          return response;
        },
        timeoutMs: 12_000,
        maxSplitRequests,
      };
      const forwarder =
        kind === 'amplitude'
          ? new AmplitudeForwarder(vendorClientOptions(options, amplitude.url))
          : new WebhookForwarder(vendorClientOptions(options));
      running.push(
        await runConsumer({
          kafka,
          destination: new ForwardingDestination(forwarder, tenants, logger, limits),
          topics: topicsOf(kind),
          groupId: `test-${kind}-${run}`,
          logger,
          // One attempt: what fails is dead-lettered at once, so the storm's requests are countable.
          policy: { maxAttempts: 1, baseDelayMs: 100, maxDelayMs: 100 },
          maxWaitTimeInMs: 100,
          sessionTimeoutMs: 6000,
        }),
      );
    }
    await Promise.all(running.map((r) => r.joined));
    // One record per tenant, in one partition: A's slow record comes first.
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic: outbox,
      acks: -1,
      messages: [envelopeOf(a, slowEvents), envelopeOf(c, stormEvents), envelopeOf(b, fastEvents)].flatMap(
        (e) =>
          toOutboxEnvelopes(e, e.events).map(({ envelope, json }) => ({
            key: outboxKey(envelope),
            value: json,
          })),
      ),
    });
    await producer.disconnect();
  }, 60_000);

  afterAll(async () => {
    await Promise.all(running.map((r) => r.stop()));
    await Promise.all([slow, storm, fast, amplitude].map((s) => s.close()));
  });

  it('delivers B to its webhook and Amplitude while A’s webhook takes 9 s, caps C’s 413 storm, and never rebalances', async () => {
    await waitFor(() => fast.accepted.length === 3 && amplitude.accepted.length === 3, 30_000, 'B delivered');
    // B arrived while A's receiver was still holding its answer: the integrations of the batch
    // were sent side by side, not behind A.
    expect(slowAnswered).toBe(false);
    expect(fast.accepted.map((a) => a.item.event)).toEqual(['fast 1', 'fast 2', 'fast 3']);
    expect(amplitude.accepted.map((a) => a.item.event_type)).toEqual(['fast 1', 'fast 2', 'fast 3']);

    await waitFor(() => slowAnswered, 30_000, 'A delivered, slowly');
    expect(slow.accepted.map((a) => a.item.event)).toEqual(['slow 1', 'slow 2']);

    // C: at most the cap of split requests after the first, then the rest is parked.
    expect(storm.requests.length).toBeLessThanOrEqual(1 + maxSplitRequests);
    expect(storm.requests.length).toBeGreaterThan(1);
    // Parked once the batch is done, A's 9 s included.
    let letters = await topicRecords(kafka, topicsOf('webhook').deadLetter);
    await waitFor(
      async () => (letters = await topicRecords(kafka, topicsOf('webhook').deadLetter)).length > 0,
      30_000,
      'C parked in the dead letters',
    );
    const parked = letters.flatMap((l) => (JSON.parse(l.value) as OutboxEnvelope).events.map((e) => e.event));
    expect(parked.sort()).toEqual(stormEvents.map((e) => e.event).sort());
    expect(letters.map((l) => l.headers['x-delivery-reason'])).toEqual(
      letters.map(() => 'too_large: still 413 after 8 smaller requests'),
    );

    // A 9 s send with a 6 s session timeout cost no member: each group joined once.
    const joins = logLines.filter((line) => line.includes('consumer joined group') && line.includes(run));
    expect(joins).toHaveLength(4);
    expect(running.every((r) => r.running())).toBe(true);
  }, 90_000);
});

describe('circuit breakers and time budgets per integration (look-alike vendors)', () => {
  let down: LookAlikeServer;
  let healthy: LookAlikeServer;
  let tenant: TenantRecord;
  let offset = 0;

  beforeAll(async () => {
    [down, healthy] = await Promise.all([startLookAlikeVendor('webhook'), startLookAlikeVendor('webhook')]);
    tenant = tenantOf([
      { ...lookAlikeDestination(down), integrationId: 'int-down' },
      { ...lookAlikeDestination(healthy), integrationId: 'int-healthy' },
    ]);
  });
  afterAll(async () => {
    await Promise.all([down.close(), healthy.close()]);
  });

  const recordOf = (events: TrackingEvent[]): DeliveryMessage => ({
    topic: 'outbox',
    partition: 0,
    offset: String((offset += 1)),
    key: null,
    value: Buffer.from(JSON.stringify(envelopeOf(tenant, events))),
    headers: {},
    timestamp: '0',
  });

  it('opens after N consecutive outages, parks without calling the vendor, and closes after a good probe', async () => {
    const destination = new ForwardingDestination(
      new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 2000 })),
      directoryOf([tenant]),
      logger,
      {
        breakerFailures: 2,
        breakerCooldownMs: 300,
      },
    );
    down.failNext({ status: 503 }, 2);
    for (let i = 0; i < 2; i += 1) {
      const report = await destination.deliver([recordOf([event(`outage ${i}`)])]);
      expect(report.failed.map((f) => [f.target, f.retryable, f.reason])).toEqual([
        ['int-down', true, expect.stringMatching(/^http_503/)],
      ]);
    }
    expect(destination.circuitOf('int-down')).toBe('open');
    expect(destination.circuitOf('int-healthy')).toBe('closed');
    const callsWhenOpened = down.requests.length;

    const parked = await destination.deliver([recordOf([event('while open')])]);
    expect(down.requests.length).toBe(callsWhenOpened);
    expect(parked.failed.map((f) => [f.target, f.retryable, f.retryAfterMs])).toEqual([
      ['int-down', true, 300],
    ]);
    expect(parked.failed[0]?.reason).toMatch(/^circuit_open: /);
    // The other integration of the same tenant is untouched.
    expect(healthy.accepted.map((a) => a.item.event)).toEqual(['outage 0', 'outage 1', 'while open']);

    // After the cooldown one probe goes through; it succeeds, and the circuit closes.
    await waitFor(
      async () => {
        const report = await destination.deliver([recordOf([event('probe')])]);
        return report.failed.length === 0;
      },
      10_000,
      'a successful probe',
    );
    expect(destination.circuitOf('int-down')).toBe('closed');
    // The probe that closed it is the one event it took, once.
    expect(down.accepted.map((a) => a.item.event)).toEqual(['probe']);
  });

  it('parks an integration that outlasts its time budget, delivering the others', async () => {
    const destination = new ForwardingDestination(
      new WebhookForwarder(vendorClientOptions({ allowPrivateRanges: ['127.0.0.0/8'], timeoutMs: 10_000 })),
      directoryOf([tenant]),
      logger,
      {
        integrationBudgetMs: 500,
      },
    );
    down.delayNext(5000, 1);
    const healthyBefore = healthy.accepted.length;
    const report = await destination.deliver([recordOf([event('budget')])]);
    expect(report.delivered).toBe(1);
    expect(report.failed.map((f) => [f.target, f.retryable, f.reason])).toEqual([
      ['int-down', true, 'time_budget_exceeded: the send outlasted its time budget'],
    ]);
    expect(healthy.accepted.slice(healthyBefore).map((a) => a.item.event)).toEqual(['budget']);
  });
});
