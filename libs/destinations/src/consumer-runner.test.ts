import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import {
  DestinationUnavailable,
  headerText,
  runConsumer,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
} from './index';
import { topicRecords, waitFor } from './testing/topic-records';

// Against the real broker: at-least-once delivery, with offsets committed only after a batch
// was delivered.
const logger = createLogger({ service: 'destinations-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'destinations-test',
  logger,
});

class RecordingDestination implements Destination {
  readonly kind = 'recording';
  readonly delivered: string[] = [];
  failuresLeft: number;
  attempts = 0;
  constructor(failures: number) {
    this.failuresLeft = failures;
  }
  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    this.attempts += 1;
    if (this.failuresLeft > 0) {
      this.failuresLeft -= 1;
      throw new DestinationUnavailable('destination unavailable');
    }
    this.delivered.push(...messages.map((m) => m.value!.toString()));
    return { delivered: messages.length, consentSkipped: 0, failed: [] };
  }
}

/** Fails records by their value: `retry:<n>` n times (retryable), `permanent` always, `always` retryably forever. */
class ScriptedDestination implements Destination {
  readonly kind = 'scripted';
  readonly delivered: { value: string; at: number; attempt: string | undefined }[] = [];
  readonly failedAt = new Map<string, number[]>();
  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    const failed: FailedDelivery[] = [];
    for (const message of messages) {
      const value = message.value!.toString();
      const times = this.failedAt.get(value) ?? [];
      const retryTimes = Number(/^retry:(\d+)/.exec(value)?.[1] ?? 0);
      const fail = (retryable: boolean, reason: string, retryAfterMs?: number) => {
        times.push(Date.now());
        this.failedAt.set(value, times);
        failed.push({
          message,
          value: message.value!,
          target: 'only',
          reason,
          retryable,
          ...(retryAfterMs ? { retryAfterMs } : {}),
        });
      };
      if (value === 'permanent') fail(false, 'vendor answered 400: bad event');
      else if (value === 'always') fail(true, 'vendor answered 503');
      else if (times.length < retryTimes)
        fail(true, 'vendor answered 429', value.endsWith(':wait') ? 1500 : undefined);
      else
        this.delivered.push({
          value,
          at: Date.now(),
          attempt: headerText(message.headers, 'x-delivery-attempt'),
        });
    }
    return { delivered: messages.length - failed.length, consentSkipped: 0, failed };
  }
}

const topicsFor = (topic: string) => ({
  source: topic,
  retry: `${topic}.retry`,
  deadLetter: `${topic}.dead-letter`,
});

async function committedOffsets(groupId: string, topic: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  const [result] = await admin.fetchOffsets({ groupId, topics: [topic] });
  await admin.disconnect();
  return (result?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
}

describe('runConsumer (real broker)', () => {
  const topic = `test.delivery.${randomUUID()}`;
  const values = Array.from({ length: 10 }, (_, i) => `event-${i}`);

  beforeAll(async () => {
    const { source, retry, deadLetter } = topicsFor(topic);
    await ensureTopics(
      kafka,
      [source, retry, deadLetter].map((t) => ({ topic: t, numPartitions: 2 })),
      { replicationFactor: 1, logger },
    );
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: values.map((value, i) => ({ key: `k${i % 3}`, value })),
    });
    await producer.disconnect();
  });

  it('redelivers a batch whose delivery failed and commits only after success', async () => {
    const groupId = `test-${randomUUID()}`;
    const destination = new RecordingDestination(1);
    const running = await runConsumer({
      kafka,
      destination,
      topics: topicsFor(topic),
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    await waitFor(() => destination.delivered.length >= values.length, 30000, 'all events delivered');
    await running.stop();

    expect(destination.attempts).toBeGreaterThan(1);
    expect([...destination.delivered].sort()).toEqual([...values].sort());
    expect(await committedOffsets(groupId, topic)).toBe(values.length);
  });

  it('never commits what it did not deliver: a restarted group resumes where delivery stopped', async () => {
    const groupId = `test-${randomUUID()}`;
    const failing = new RecordingDestination(Number.MAX_SAFE_INTEGER);
    const first = await runConsumer({
      kafka,
      destination: failing,
      topics: topicsFor(topic),
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    await waitFor(() => failing.attempts >= 1, 20000, 'a delivery attempt');
    await first.stop(); // a "crash" while every delivery fails
    expect(await committedOffsets(groupId, topic)).toBe(0);

    const healthy = new RecordingDestination(0);
    const second = await runConsumer({
      kafka,
      destination: healthy,
      topics: topicsFor(topic),
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    await waitFor(() => healthy.delivered.length >= values.length, 30000, 'redelivery after restart');
    await second.stop();
    expect([...healthy.delivered].sort()).toEqual([...values].sort());

    // Everything is committed now: a third consumer of the group has nothing left to read. A
    // marker sent to each partition after it joined proves that it reads, and is all it reads.
    const third = new RecordingDestination(0);
    const last = await runConsumer({
      kafka,
      destination: third,
      topics: topicsFor(topic),
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    await last.joined;
    const markers = ['marker-0', 'marker-1'];
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: markers.map((value, partition) => ({ value, partition })),
    });
    await producer.disconnect();
    await waitFor(() => third.delivered.length >= markers.length, 30000, 'the markers');
    await last.stop();
    expect([...third.delivered].sort()).toEqual(markers);
  });
});

describe('retries and dead letters (real broker)', () => {
  const topic = `test.parking.${randomUUID()}`;
  const topics = topicsFor(topic);
  const policy = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 400 };

  beforeAll(async () => {
    await ensureTopics(
      kafka,
      [topics.source, topics.retry, topics.deadLetter].map((t) => ({ topic: t, numPartitions: 2 })),
      { replicationFactor: 1, logger },
    );
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({
      topic,
      acks: -1,
      messages: ['ok-1', 'retry:2', 'retry:1:wait', 'permanent', 'always', 'ok-2'].map((value, i) => ({
        key: `k${i}`,
        value,
      })),
    });
    await producer.disconnect();
  });

  it('retries retryable failures with backoff and Retry-After, and dead-letters permanent and exhausted ones with the reason', async () => {
    const destination = new ScriptedDestination();
    const running = await runConsumer({
      kafka,
      destination,
      topics,
      groupId: `test-${randomUUID()}`,
      logger,
      policy,
      maxWaitTimeInMs: 100,
    });
    await waitFor(() => destination.delivered.length >= 4, 30000, 'the deliverable records');
    await waitFor(
      async () => (await topicRecords(kafka, topics.deadLetter)).length >= 2,
      30000,
      'two dead letters',
    );
    await running.stop();

    expect(destination.delivered.map((d) => d.value).sort()).toEqual([
      'ok-1',
      'ok-2',
      'retry:1:wait',
      'retry:2',
    ]);
    // Delivered from the retry topic on the attempt after the failures.
    expect(destination.delivered.find((d) => d.value === 'retry:2')?.attempt).toBe('2');
    const waited = destination.delivered.find((d) => d.value === 'retry:1:wait')!;
    expect(waited.at - destination.failedAt.get('retry:1:wait')![0]!).toBeGreaterThanOrEqual(1400);

    const deadLetters = await topicRecords(kafka, topics.deadLetter);
    const byValue = Object.fromEntries(deadLetters.map((r) => [r.value, r.headers]));
    expect(Object.keys(byValue).sort()).toEqual(['always', 'permanent']);
    expect(byValue.permanent).toMatchObject({
      'x-delivery-attempt': '1',
      'x-delivery-permanent': 'true',
      'x-delivery-reason': 'vendor answered 400: bad event',
      'x-delivery-target': 'only',
      'x-delivery-destination': 'scripted',
    });
    expect(byValue.always).toMatchObject({ 'x-delivery-attempt': '3', 'x-delivery-permanent': 'false' });
    expect(destination.failedAt.get('always')).toHaveLength(3);
    expect(destination.failedAt.get('permanent')).toHaveLength(1);
    // Retry records carry the attempt count and when the next attempt is due.
    const retries = await topicRecords(kafka, topics.retry);
    expect(retries.length).toBe(5); // retry:2 twice, retry:1:wait once, always twice
    for (const r of retries) {
      expect(Number(r.headers['x-delivery-next-attempt-at'])).toBeGreaterThan(0);
      expect(r.headers['x-delivery-origin']).toMatch(new RegExp(`^${topic}/\\d+/\\d+$`));
    }
  });
});

describe('a consumer that can no longer deliver (real broker)', () => {
  const topic = `test.fatal.${randomUUID()}`;

  beforeAll(async () => {
    await ensureTopics(
      kafka,
      [topic, `${topic}.retry`, `${topic}.dead-letter`].map((t) => ({ topic: t, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({ topic, acks: -1, messages: [{ value: 'first' }, { value: 'second' }] });
    await producer.disconnect();
  });

  it('reports not running and calls onFatal once on an unexpected error, committing nothing', async () => {
    const groupId = `test-${randomUUID()}`;
    const ownTopic = `test.fatal.own.${randomUUID()}`;
    await ensureTopics(
      kafka,
      [ownTopic, `${ownTopic}.retry`, `${ownTopic}.dead-letter`].map((t) => ({ topic: t, numPartitions: 1 })),
      { replicationFactor: 1, logger },
    );
    let calls = 0;
    const broken: Destination = {
      kind: 'broken',
      deliver: () => Promise.reject(new TypeError("Cannot read properties of undefined (reading 'x')")),
    };
    const fatalErrors: Error[] = [];
    let runningWhenFatal: boolean | undefined;
    const holder: { consumer?: Awaited<ReturnType<typeof runConsumer>> } = {};
    const consumer = await runConsumer({
      kafka,
      destination: broken,
      topics: topicsFor(ownTopic),
      groupId,
      logger,
      maxWaitTimeInMs: 100,
      onFatal: (error) => {
        calls += 1;
        fatalErrors.push(error);
        // /health reads running(): it is already false when the process is told to exit.
        runningWhenFatal = holder.consumer?.running();
      },
    });
    holder.consumer = consumer;
    await consumer.joined;
    expect(consumer.running()).toBe(true);
    // Written once the consumer runs, so the failure meets a consumer the test holds.
    const producer = createProducer(kafka);
    await producer.connect();
    await producer.send({ topic: ownTopic, acks: -1, messages: [{ value: 'poison for a bug' }] });
    await producer.disconnect();
    await waitFor(() => calls > 0, 20_000, 'the fatal error');
    // kafkajs retries the failed batch; each retry meets the same stopped runner, not onFatal again.
    await waitFor(() => !consumer.running(), 20_000, 'running() to turn false');
    await consumer.stop();
    expect(calls).toBe(1);
    expect(fatalErrors[0]?.message).toBe("Cannot read properties of undefined (reading 'x')");
    expect(runningWhenFatal).toBe(false);
    expect(await committedOffsets(groupId, ownTopic)).toBe(0);
  });

  it('keeps retrying a batch while the destination is unavailable, reports since when, then commits', async () => {
    const groupId = `test-${randomUUID()}`;
    const destination = new RecordingDestination(3);
    const running = await runConsumer({
      kafka,
      destination,
      topics: topicsFor(topic),
      groupId,
      logger,
      maxWaitTimeInMs: 100,
      unavailableBackoff: { baseDelayMs: 50, maxDelayMs: 100 },
    });
    await running.joined;
    await waitFor(
      () => running.unavailableSince() !== undefined,
      20_000,
      'the destination to be unavailable',
    );
    expect(running.running()).toBe(true);
    await waitFor(
      async () => (await committedOffsets(groupId, topic)) === 2,
      20_000,
      'both records committed',
    );
    expect(destination.attempts).toBe(4);
    expect(destination.delivered).toEqual(['first', 'second']);
    expect(running.unavailableSince()).toBeUndefined();
    await running.stop();
  });
});
