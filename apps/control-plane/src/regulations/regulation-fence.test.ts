import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Admin, Producer } from 'kafkajs';
import { loadConfig } from '@pipeline/config';
import { consumerGroupFor, deliveryTopicsFor, retryGroupFor } from '@pipeline/destinations';
import {
  createKafka,
  createProducer,
  ensureTopics,
  kafkaConfigSchema,
  pipelineTopics,
  prefixedTopic,
} from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { passedMarks, RegulationFence } from './regulation-fence';

const logger = createLogger({ service: 'regulation-fence-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'regulation-fence-test',
  logger,
});

describe('passedMarks', () => {
  const marks = { '0': '5', '1': '0' };
  it('is passed when every partition committed at or past its mark', () => {
    expect(
      passedMarks(
        marks,
        new Map([
          [0, 5n],
          [1, 0n],
        ]),
        new Map(),
      ),
    ).toBe(true);
    expect(
      passedMarks(
        marks,
        new Map([
          [0, 9n],
          [1, 3n],
        ]),
        new Map(),
      ),
    ).toBe(true);
    expect(
      passedMarks(
        marks,
        new Map([
          [0, 4n],
          [1, 3n],
        ]),
        new Map(),
      ),
    ).toBe(false);
  });

  it('counts a partition the group never committed from its first record still kept', () => {
    expect(passedMarks(marks, new Map([[1, 0n]]), new Map([[0, 0n]]))).toBe(false);
    expect(
      passedMarks(
        marks,
        new Map([
          [0, -1n],
          [1, -1n],
        ]),
        new Map([
          [0, 5n],
          [1, 0n],
        ]),
      ),
    ).toBe(true);
    expect(passedMarks(marks, new Map(), new Map([[0, 4n]]))).toBe(false);
    expect(passedMarks({}, new Map(), new Map())).toBe(true);
  });
});

// The fence on a real broker: marks recorded from the topics' high-water marks, and a kind's
// groups passing them only once both its outbox and its retry group committed past them.
describe('RegulationFence (real Kafka)', () => {
  const prefix = `test.${randomUUID()}.`;
  const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix).topic;
  const retry = deliveryTopicsFor('amplitude', prefix).retry.topic;
  const group = consumerGroupFor('amplitude', prefix);
  let admin: Admin;
  let producer: Producer;
  const fence = new RegulationFence(kafka, prefix);

  beforeAll(async () => {
    await ensureTopics(
      kafka,
      [prefixedTopic(pipelineTopics.trackingEvents, prefix), deliveryTopicsFor('amplitude', prefix).retry],
      { replicationFactor: 1, logger },
    );
    admin = kafka.admin();
    await admin.connect();
    producer = createProducer(kafka);
    await producer.connect();
  });
  afterAll(async () => {
    await fence.close();
    await producer.disconnect();
    await admin.disconnect();
  });

  const commit = (groupId: string, topic: string, offsets: Record<string, string>) =>
    admin.setOffsets({
      groupId,
      topic,
      partitions: Object.entries(offsets).map(([partition, offset]) => ({
        partition: Number(partition),
        offset,
      })),
    });

  it('waits for the kind outbox and retry groups to pass what was written before, and only that', async () => {
    await producer.send({
      topic: outbox,
      messages: [0, 1, 2].map((p) => ({ partition: p, value: `o${p}` })),
    });
    await producer.send({ topic: outbox, messages: [{ partition: 0, value: 'again' }] });
    await producer.send({ topic: retry, messages: [{ partition: 3, value: 'r' }] });
    // A kind whose retry topic does not exist yet has nothing in flight there.
    const marks = await fence.record(['amplitude', 'braze']);
    expect(Object.keys(marks).sort()).toEqual([outbox, retry].sort());
    expect(marks[outbox]).toMatchObject({ '0': '2', '1': '1', '2': '1', '3': '0' });
    expect(marks[retry]).toMatchObject({ '3': '1', '0': '0' });

    expect(await fence.passed('amplitude', marks)).toBe(false);
    await commit(group, outbox, { '0': '1', '1': '1', '2': '1' });
    expect(await fence.passed('amplitude', marks)).toBe(false);
    await commit(group, outbox, { '0': '2' });
    // The retry group has not read the record held in partition 3.
    expect(await fence.passed('amplitude', marks)).toBe(false);
    await commit(retryGroupFor(group), retry, { '3': '1' });
    expect(await fence.passed('amplitude', marks)).toBe(true);
    // Written after the fence: the consumers drop it themselves; the fence does not wait for it.
    await producer.send({ topic: outbox, messages: [{ partition: 0, value: 'later' }] });
    expect(await fence.passed('amplitude', marks)).toBe(true);
    // Another kind's groups have committed nothing: its fence holds.
    expect(await fence.passed('webhook', marks)).toBe(false);
  });
});
