import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { runConsumer, type DeliveryMessage, type Destination } from './index';

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
  async deliver(messages: readonly DeliveryMessage[]): Promise<void> {
    this.attempts += 1;
    if (this.failuresLeft > 0) {
      this.failuresLeft -= 1;
      throw new Error('destination unavailable');
    }
    this.delivered.push(...messages.map((m) => m.value!.toString()));
  }
}

async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

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
    await ensureTopics(kafka, [{ topic, numPartitions: 2 }], { replicationFactor: 1, logger });
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
    const running = await runConsumer({ kafka, destination, topic, groupId, logger, maxWaitTimeInMs: 100 });
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
      topic,
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
      topic,
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    await waitFor(() => healthy.delivered.length >= values.length, 30000, 'redelivery after restart');
    await second.stop();
    expect([...healthy.delivered].sort()).toEqual([...values].sort());

    // Everything is committed now: a third consumer of the group has nothing left to read.
    const third = new RecordingDestination(0);
    const last = await runConsumer({
      kafka,
      destination: third,
      topic,
      groupId,
      logger,
      maxWaitTimeInMs: 100,
    });
    await last.joined;
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await last.stop();
    expect(third.delivered).toEqual([]);
  });
});
