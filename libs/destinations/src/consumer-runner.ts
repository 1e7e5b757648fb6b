import type { Batch, Consumer, Kafka, Message, Producer } from 'kafkajs';
import { createProducer } from '@pipeline/kafka';
import type { Logger } from '@pipeline/logger';
import {
  deliveryHeaders,
  headerText,
  type DeliveryMessage,
  type Destination,
  type FailedDelivery,
} from './destination';
import type { DeliveryMetrics } from './delivery-metrics';

export interface RetryPolicy {
  /** Attempts in all, the first included; after the last a retryable failure is dead-lettered too. */
  maxAttempts: number;
  /** The wait before the second attempt; it doubles for each further one (with jitter). */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 6, baseDelayMs: 2000, maxDelayMs: 10 * 60_000 };

export interface DeliveryTopics {
  /** The outbox. */
  source: string;
  /** Records waiting for another attempt, with the attempt count and due time in headers. */
  retry: string;
  /** Records that will not be attempted again, with the reason. */
  deadLetter: string;
}

export interface ConsumerRunnerOptions {
  kafka: Kafka;
  destination: Destination;
  topics: DeliveryTopics;
  /** One group per destination kind: each keeps its own position, so none holds back another. */
  groupId: string;
  logger: Logger;
  policy?: RetryPolicy;
  metrics?: DeliveryMetrics;
  /** Where a new group starts; the outbox is read from its beginning by default. */
  fromBeginning?: boolean;
  maxWaitTimeInMs?: number;
  /** How long the group waits for a member that stopped heartbeating (a killed process). */
  sessionTimeoutMs?: number;
  /** Called when a consumer crashed and kafkajs will not restart it. */
  onFatal?: (error: Error) => void;
  random?: () => number;
}

export interface RunningConsumer {
  /** Stops fetching, lets the batches in hand finish and commit, and leaves the groups. */
  stop(): Promise<void>;
  /** Resolves once both consumers (outbox and retries) have joined their groups. */
  joined: Promise<void>;
}

/** The retry consumer's group: its own position in the retry topic. */
export const retryGroupFor = (groupId: string) => `${groupId}.retry`;

/** Exponential backoff with jitter (half to all of the step), at least the vendor's Retry-After. */
export function retryDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfterMs = 0,
  random: () => number = Math.random,
): number {
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1));
  return Math.max(retryAfterMs, Math.round(step * (0.5 + random() / 2)));
}

const toMessages = (batch: Batch): DeliveryMessage[] =>
  batch.messages.map((m) => ({
    topic: batch.topic,
    partition: batch.partition,
    offset: m.offset,
    key: m.key ? m.key.toString('utf8') : null,
    value: m.value,
    headers: m.headers ?? {},
    timestamp: m.timestamp,
  }));

const dueAt = (message: DeliveryMessage) =>
  Number(headerText(message.headers, deliveryHeaders.nextAttemptAt) ?? '0');

/**
 * Runs a destination with at-least-once delivery. Two consumers: one reads the outbox, one the
 * destination's retry topic (each record when it is due). A batch's offsets are committed only
 * after every record was delivered or parked: failures go to the retry topic with the attempt
 * count and the next attempt's time, or, when permanent or out of attempts, to the dead-letter
 * topic with the reason, both acknowledged by all in-sync replicas first. A crash at any point
 * means the batch is read again; the destinations are idempotent on messageId.
 */
export async function runConsumer(options: ConsumerRunnerOptions): Promise<RunningConsumer> {
  const { kafka, destination, topics, groupId, logger, metrics } = options;
  const policy = options.policy ?? defaultRetryPolicy;
  const random = options.random ?? Math.random;
  const producer: Producer = createProducer(kafka);
  await producer.connect();

  const park = async (failures: readonly FailedDelivery[]): Promise<void> => {
    const retries: Message[] = [];
    const deadLetters: Message[] = [];
    const now = Date.now();
    for (const failure of failures) {
      const { message } = failure;
      const attempt = Number(headerText(message.headers, deliveryHeaders.attempt) ?? '0') + 1;
      const headers = {
        [deliveryHeaders.destination]: destination.kind,
        [deliveryHeaders.target]: failure.target,
        [deliveryHeaders.attempt]: String(attempt),
        [deliveryHeaders.reason]: failure.reason,
        [deliveryHeaders.origin]:
          headerText(message.headers, deliveryHeaders.origin) ??
          `${message.topic}/${message.partition}/${message.offset}`,
      };
      const record = { key: message.key, value: failure.value };
      if (failure.retryable && attempt < policy.maxAttempts) {
        const next = now + retryDelayMs(policy, attempt, failure.retryAfterMs, random);
        retries.push({ ...record, headers: { ...headers, [deliveryHeaders.nextAttemptAt]: String(next) } });
      } else {
        deadLetters.push({
          ...record,
          headers: {
            ...headers,
            [deliveryHeaders.permanent]: String(!failure.retryable),
            [deliveryHeaders.deadLetteredAt]: new Date(now).toISOString(),
          },
        });
      }
      logger.warn('delivery failed', {
        destination: destination.kind,
        target: failure.target,
        attempt,
        retryable: failure.retryable,
        reason: failure.reason,
        parkedIn: failure.retryable && attempt < policy.maxAttempts ? 'retry' : 'dead-letter',
      });
    }
    const topicMessages = [
      ...(retries.length > 0 ? [{ topic: topics.retry, messages: retries }] : []),
      ...(deadLetters.length > 0 ? [{ topic: topics.deadLetter, messages: deadLetters }] : []),
    ];
    if (topicMessages.length > 0) await producer.sendBatch({ topicMessages, acks: -1 });
    metrics?.parked(destination.kind, retries.length, deadLetters.length);
  };

  const deliverAndPark = async (messages: DeliveryMessage[]): Promise<void> => {
    const started = Date.now();
    const report = await destination.deliver(messages);
    if (report.failed.length > 0) await park(report.failed);
    metrics?.delivered(destination.kind, report.delivered, report.consentSkipped);
    logger.debug('batch handled', {
      destination: destination.kind,
      count: messages.length,
      delivered: report.delivered,
      failed: report.failed.length,
      durationMs: Date.now() - started,
    });
  };

  const commit = (consumer: Consumer, message: DeliveryMessage) =>
    // The committed offset is the next one to read.
    consumer.commitOffsets([
      {
        topic: message.topic,
        partition: message.partition,
        offset: (BigInt(message.offset) + 1n).toString(),
      },
    ]);

  const consumers: Consumer[] = [];
  const start = async (
    group: string,
    topic: string,
    eachBatch: (consumer: Consumer) => Parameters<Consumer['run']>[0],
  ): Promise<Promise<void>> => {
    const consumer = kafka.consumer({
      groupId: group,
      maxWaitTimeInMs: options.maxWaitTimeInMs ?? 500,
      sessionTimeout: options.sessionTimeoutMs ?? 30_000,
      heartbeatInterval: Math.min(3000, Math.floor((options.sessionTimeoutMs ?? 30_000) / 3)),
      // A batch that throws is retried with backoff up to ~30 s, then the consumer restarts and
      // re-reads from the last committed offset.
      retry: { initialRetryTime: 300, maxRetryTime: 30000, retries: 8 },
    });
    consumers.push(consumer);
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        logger.info('consumer joined group', {
          groupId: group,
          memberAssignment: event.payload.memberAssignment,
        });
        resolve();
      });
    });
    consumer.on(consumer.events.CRASH, (event) => {
      logger.error('consumer crashed', {
        groupId: group,
        error: event.payload.error.message,
        restart: event.payload.restart,
      });
      if (!event.payload.restart) options.onFatal?.(event.payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: options.fromBeginning ?? true });
    await consumer.run(eachBatch(consumer));
    return joined;
  };

  const outboxJoined = await start(groupId, topics.source, (consumer) => ({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      const messages = toMessages(batch);
      const last = messages[messages.length - 1];
      if (!last || !isRunning() || isStale()) return;
      await deliverAndPark(messages);
      resolveOffset(last.offset);
      await commit(consumer, last);
      await heartbeat();
    },
  }));

  const retriesJoined = await start(retryGroupFor(groupId), topics.retry, (consumer) => ({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      const messages = toMessages(batch);
      let next = 0;
      while (next < messages.length) {
        if (!isRunning() || isStale()) return;
        const head = messages[next];
        if (!head) return;
        const wait = dueAt(head) - Date.now();
        if (wait > 0) {
          // Records wait in order: a later one is not attempted before the head of its
          // partition, which delays it by at most the longest backoff.
          await new Promise((resolve) => setTimeout(resolve, Math.min(wait, 1000)));
          await heartbeat();
          continue;
        }
        let end = next + 1;
        while (end < messages.length && dueAt(messages[end] as DeliveryMessage) <= Date.now()) end += 1;
        const due = messages.slice(next, end);
        await deliverAndPark(due);
        const last = due[due.length - 1] as DeliveryMessage;
        resolveOffset(last.offset);
        await commit(consumer, last);
        await heartbeat();
        next = end;
      }
    },
  }));

  return {
    joined: Promise.all([outboxJoined, retriesJoined]).then(() => undefined),
    stop: async () => {
      await Promise.all(consumers.map((consumer) => consumer.disconnect()));
      await producer.disconnect();
      await destination.close?.();
    },
  };
}
