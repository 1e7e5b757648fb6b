import type { Consumer, Kafka } from 'kafkajs';
import type { Logger } from '@pipeline/logger';
import type { DeliveryMessage, Destination } from './destination';

export interface ConsumerRunnerOptions {
  kafka: Kafka;
  destination: Destination;
  topic: string;
  /** One group per destination kind: each keeps its own position, so none holds back another. */
  groupId: string;
  logger: Logger;
  /** Where a new group starts; the outbox is read from its beginning by default. */
  fromBeginning?: boolean;
  maxWaitTimeInMs?: number;
  /** Called when the consumer crashed and kafkajs will not restart it. */
  onFatal?: (error: Error) => void;
}

export interface RunningConsumer {
  /** Stops fetching, lets the batch in hand finish and commit, and leaves the group. */
  stop(): Promise<void>;
  /** Resolves once the consumer has joined its group. */
  joined: Promise<void>;
}

/**
 * Runs a destination over a topic with at-least-once delivery: a batch's offsets are
 * committed only after `destination.deliver` resolved for it. A crash or a throw at any point
 * before that means the batch is read again; nothing acknowledged upstream is skipped.
 */
export async function runConsumer(options: ConsumerRunnerOptions): Promise<RunningConsumer> {
  const { kafka, destination, topic, groupId, logger } = options;
  const consumer: Consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs: options.maxWaitTimeInMs ?? 500,
    // Retries of a failing batch back off up to ~30 s, then the consumer restarts and re-reads
    // from the last committed offset.
    retry: { initialRetryTime: 300, maxRetryTime: 30000, retries: 8 },
  });
  const joined = new Promise<void>((resolve) => {
    consumer.on(consumer.events.GROUP_JOIN, (event) => {
      logger.info('consumer joined group', { groupId, memberAssignment: event.payload.memberAssignment });
      resolve();
    });
  });
  consumer.on(consumer.events.CRASH, (event) => {
    logger.error('consumer crashed', {
      groupId,
      error: event.payload.error.message,
      restart: event.payload.restart,
    });
    if (!event.payload.restart) options.onFatal?.(event.payload.error);
  });

  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: options.fromBeginning ?? true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      if (batch.messages.length === 0 || !isRunning() || isStale()) return;
      const messages: DeliveryMessage[] = batch.messages.map((m) => ({
        topic: batch.topic,
        partition: batch.partition,
        offset: m.offset,
        key: m.key ? m.key.toString('utf8') : null,
        value: m.value,
        headers: m.headers ?? {},
        timestamp: m.timestamp,
      }));
      const started = Date.now();
      await destination.deliver(messages);
      const last = batch.messages[batch.messages.length - 1];
      if (!last) return;
      resolveOffset(last.offset);
      // The committed offset is the next one to read.
      await consumer.commitOffsets([
        { topic: batch.topic, partition: batch.partition, offset: (BigInt(last.offset) + 1n).toString() },
      ]);
      await heartbeat();
      logger.debug('batch delivered', {
        destination: destination.kind,
        partition: batch.partition,
        count: messages.length,
        lastOffset: last.offset,
        durationMs: Date.now() - started,
      });
    },
  });

  return {
    joined,
    stop: async () => {
      await consumer.disconnect();
      await destination.close?.();
    },
  };
}
