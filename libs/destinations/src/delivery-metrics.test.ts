import { randomUUID } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { outboxKey, toOutboxEnvelopes, type TrackingEvent } from '@pipeline/events';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import type { TenantRecord } from '@pipeline/tenancy';
import { runConsumer, type RunningConsumer } from './consumer-runner';
import { DeliveryMetrics } from './delivery-metrics';
import type { WarehouseHealth } from './destination';
import type { FunctionStepCounters } from './functions/function-step';
import { vendorClientOptions } from './forwarding/forwarder';
import { ForwardingDestination } from './forwarding/forwarding-destination';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from './forwarding/testing/vendor-server';
import { WebhookForwarder } from './forwarding/vendors/webhook/webhook-forwarder';
import { parsePrometheusText, sampleSum, type PrometheusSample } from './testing/prometheus-text';
import { waitFor } from './testing/topic-records';
import { TenantDirectory } from './tenant-directory';

const logger = createLogger({ service: 'delivery-metrics-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'delivery-metrics-test',
  logger,
});

/** A pass-through to the look-alike that can refuse connections and take them again, on one port. */
async function startGate(
  target: string,
): Promise<{ url: string; refuse(): Promise<void>; open(): Promise<void> }> {
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    const forwarded = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: req.url,
        method: req.method,
        headers: req.headers,
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', () => res.destroy());
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${upstream.pathname}`,
    refuse: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
    open: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
  };
}

// A forwarding consumer on the real broker against the webhook look-alike, scraped after each
// step: what the vendor answered, by status class, and the breaker's state.
describe('delivery metrics (real Kafka, webhook look-alike)', () => {
  const run = randomUUID();
  const topics = {
    source: `test.delivery-metrics.${run}`,
    retry: `test.delivery-metrics.${run}.webhook.retry`,
    deadLetter: `test.delivery-metrics.${run}.webhook.dead-letter`,
  };
  const metrics = new DeliveryMetrics();
  let hook: LookAlikeServer;
  let gate: Awaited<ReturnType<typeof startGate>>;
  let tenant: TenantRecord;
  let consumer: RunningConsumer;

  const scrape = async () => parsePrometheusText(await metrics.text());
  const responses = async (statusClass: string) =>
    sampleSum(await scrape(), 'pipeline_delivery_vendor_responses_total', {
      destination: 'webhook',
      status_class: statusClass,
    });
  const circuitsOpen = async () =>
    sampleSum(await scrape(), 'pipeline_delivery_circuits_open', { destination: 'webhook' });
  /** The look-alike's answers so far by status class. */
  const answered = (statusClass: string) =>
    hook.requests.filter((r) => `${Math.floor(r.status / 100)}xx` === statusClass).length;

  const send = async (name: string) => {
    const event: TrackingEvent = {
      type: 'track',
      event: name,
      messageId: randomUUID(),
      anonymousId: 'anon-1',
      timestamp: '2026-03-01T10:00:00.000Z',
      properties: {},
    } as TrackingEvent;
    const receipt = {
      v: 2 as const,
      accountId: tenant.accountId,
      writeKeyId: tenant.writeKeyId,
      batchId: randomUUID(),
      receivedAt: '2026-03-01T10:00:05.000Z',
      ip: null,
      userAgent: null,
    };
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic: topics.source,
      acks: -1,
      messages: toOutboxEnvelopes(receipt, [event]).map(({ envelope, json }) => ({
        key: outboxKey(envelope),
        value: json,
      })),
    });
    await producer.disconnect();
  };
  const accepted = (name: string) => hook.accepted.some((a) => a.item.event === name);

  beforeAll(async () => {
    hook = await startLookAlikeVendor('webhook');
    gate = await startGate(hook.url);
    const destination = lookAlikeDestination(hook);
    tenant = {
      accountId: randomUUID(),
      writeKeyId: randomUUID(),
      status: 'active',
      allowedOrigins: [],
      destinations: [{ ...destination, appConfig: { url: gate.url } }],
      warehouse: null,
    };
    await ensureTopics(
      kafka,
      Object.values(topics).map((topic) => ({ topic, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    const tenants = new TenantDirectory(
      { lookup: (writeKeyId) => Promise.resolve(writeKeyId === tenant.writeKeyId ? tenant : null) },
      { ttlMs: 60_000 },
      logger,
    );
    const forwarder = new WebhookForwarder(
      vendorClientOptions({
        allowPrivateRanges: ['127.0.0.0/8'],
        timeoutMs: 2000,
        onResponse: (statusClass) => metrics.vendorResponse('webhook', statusClass),
      }),
    );
    consumer = await runConsumer({
      kafka,
      destination: new ForwardingDestination(forwarder, tenants, logger, {
        breakerFailures: 3,
        breakerCooldownMs: 2000,
      }),
      topics,
      groupId: `test-delivery-metrics-${run}`,
      logger,
      metrics,
      policy: { maxAttempts: 20, baseDelayMs: 50, maxDelayMs: 200 },
      maxWaitTimeInMs: 100,
    });
    await consumer.joined;
  });

  afterAll(async () => {
    await consumer?.stop();
    await gate?.refuse();
    await hook?.close();
  });

  it('counts every vendor answer by status class, times batches, and reports the open circuit until it closes', async () => {
    // 200
    await send('first');
    await waitFor(() => accepted('first'), 20_000, 'the first event delivered');
    // The client counts the answer once it arrived, a moment after the look-alike took the event.
    await waitFor(async () => (await responses('2xx')) === 1, 5_000, 'the 200 counted');
    expect(await circuitsOpen()).toBe(0);

    // 500, then accepted on the retry
    hook.failNext({ status: 500 });
    await send('second');
    await waitFor(() => accepted('second'), 20_000, 'the second event delivered on its retry');
    await waitFor(async () => (await responses('2xx')) === 2, 5_000, 'the second 200 counted');
    expect([await responses('2xx'), await responses('5xx'), await responses('network')]).toEqual([2, 1, 0]);

    // 400: dead-lettered at once, by its reason
    hook.failNext({ status: 400 });
    await send('third');
    await waitFor(
      async () =>
        sampleSum(await scrape(), 'pipeline_delivery_records_dead_lettered_total', {
          destination: 'webhook',
          reason: 'http_400',
        }) === 1,
      20_000,
      'the 400 dead-lettered',
    );
    expect(await responses('4xx')).toBe(1);

    // Refused connections: three in a row open the circuit; no request is made while it is open.
    await gate.refuse();
    await send('fourth');
    await waitFor(async () => (await circuitsOpen()) === 1, 20_000, 'the circuit open');
    await gate.open();
    expect(await responses('network')).toBe(3);

    // The probe after the cooldown goes through, and the circuit closes.
    await waitFor(async () => (await circuitsOpen()) === 0, 20_000, 'the circuit closed');
    await waitFor(() => accepted('fourth'), 20_000, 'the fourth event delivered');
    const delivered = (samples: PrometheusSample[]) =>
      sampleSum(samples, 'pipeline_delivery_events_delivered_total', { destination: 'webhook' });
    await waitFor(async () => delivered(await scrape()) === 3, 5_000, 'three events counted delivered');

    const samples = await scrape();
    // Exactly what the look-alike answered, and a refused connection for each of the three.
    for (const statusClass of ['2xx', '4xx', '5xx'])
      expect([statusClass, await responses(statusClass)]).toEqual([statusClass, answered(statusClass)]);
    expect([answered('2xx'), answered('4xx'), answered('5xx')]).toEqual([3, 1, 1]);
    expect(await responses('network')).toBe(3);
    expect(
      sampleSum(samples, 'pipeline_delivery_batch_duration_seconds_count', { destination: 'webhook' }),
    ).toBeGreaterThanOrEqual(8);
    // The default process metrics are on the same registry.
    expect(sampleSum(samples, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    expect(sampleSum(samples, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
  }, 90_000);
});

describe('warehouse metrics', () => {
  it("reports each warehouse's breaker and status at each scrape, and counts held records", async () => {
    const metrics = new DeliveryMetrics();
    let health: WarehouseHealth[] = [
      { warehouseId: 'wh-1', breaker: 'closed', status: 'active' },
      { warehouseId: 'wh-2', breaker: 'open', status: 'misconfigured' },
      { warehouseId: 'wh-3', breaker: 'half-open', status: 'unavailable' },
    ];
    metrics.watchWarehouses(() => health);
    metrics.parked('warehouse', 5, [], 3);
    let samples = parsePrometheusText(await metrics.text());
    const open = (warehouse: string) =>
      sampleSum(samples, 'pipeline_delivery_warehouse_breaker_open', { warehouse });
    const status = (warehouse: string, value: string) =>
      sampleSum(samples, 'pipeline_delivery_warehouse_status', { warehouse, status: value });
    expect([open('wh-1'), open('wh-2'), open('wh-3')]).toEqual([0, 1, 1]);
    expect([
      status('wh-1', 'active'),
      status('wh-2', 'misconfigured'),
      status('wh-3', 'unavailable'),
    ]).toEqual([1, 1, 1]);
    expect(sampleSum(samples, 'pipeline_delivery_warehouse_status', { warehouse: 'wh-2' })).toBe(1);
    expect(sampleSum(samples, 'pipeline_delivery_records_held_total', { destination: 'warehouse' })).toBe(3);
    expect(sampleSum(samples, 'pipeline_delivery_records_retried_total', { destination: 'warehouse' })).toBe(
      5,
    );

    // A scrape shows the state now: a status it left is gone, not stuck at 1.
    health = [{ warehouseId: 'wh-2', breaker: 'closed', status: 'active' }];
    samples = parsePrometheusText(await metrics.text());
    expect(open('wh-2')).toBe(0);
    expect(status('wh-2', 'misconfigured')).toBe(0);
    expect(status('wh-2', 'active')).toBe(1);
    expect(open('wh-1')).toBe(0);
    expect(sampleSum(samples, 'pipeline_delivery_warehouse_status', { warehouse: 'wh-1' })).toBe(0);
  });
});

describe('function metrics', () => {
  it("reports the function step's counts as counters that only grow, and the disabled versions now", async () => {
    const metrics = new DeliveryMetrics();
    let disabled = 2;
    const counters: FunctionStepCounters = {
      events: new Map([
        ['ok', 7],
        ['function_error', 2],
      ]),
      cpuMicros: 1_500_000,
      disabled: () => disabled,
    };
    metrics.watchFunctions(counters);
    let samples = parsePrometheusText(await metrics.text());
    const events = (result: string) => sampleSum(samples, 'pipeline_function_events_total', { result });
    expect([events('ok'), events('function_error'), events('dropped')]).toEqual([7, 2, 0]);
    expect(sampleSum(samples, 'pipeline_function_cpu_seconds_total', {})).toBe(1.5);
    expect(sampleSum(samples, 'pipeline_function_disabled', {})).toBe(2);

    // The next scrape adds what grew since the last, never counting twice.
    counters.events.set('ok', 10);
    counters.events.set('dropped', 1);
    counters.cpuMicros = 2_000_000;
    disabled = 0;
    samples = parsePrometheusText(await metrics.text());
    expect([events('ok'), events('function_error'), events('dropped')]).toEqual([10, 2, 1]);
    expect(sampleSum(samples, 'pipeline_function_cpu_seconds_total', {})).toBe(2);
    expect(sampleSum(samples, 'pipeline_function_disabled', {})).toBe(0);
  });
});
