import type { Batch, Consumer, Kafka, Message, Producer } from 'kafkajs';
import { createProducer } from '@pipeline/kafka';
import type { Logger } from '@pipeline/logger';
import { traceHeadersOf, withProcessSpan } from '@pipeline/telemetry';
import {
  DestinationUnavailable,
  deliveryHeaders,
  headerText,
  type DeliveryMessage,
  type Destination,
  type FailedDelivery,
} from './destination';
import type { DeliveryMetrics } from './delivery-metrics';
import { parseOutboxEnvelope } from '@pipeline/events';
import { recordOutcome, type OutcomeRecorder } from './outcome-recorder';
import { isQuarantineReason, quarantinedOutcomes } from './plan-decisions';
import { withoutRegulatedEvents, type RegulationSource } from './regulation-filter';
import {
  attemptAfter,
  deadLetterReason,
  defaultRetryPolicy,
  retryDelayMs,
  shouldRetry,
  type RetryPolicy,
} from './retry-schedule';

export { defaultRetryPolicy, reasonCategory, retryDelayMs, type RetryPolicy } from './retry-schedule';

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
  /**
   * Outbox partitions whose batches are delivered at the same time (kafkajs's
   * partitionsConsumedConcurrently; 1 by default). Order within a partition and its commits stay
   * as with 1; only the warehouse uses more (docs/performance.md, "Warehouse").
   */
  partitionsConcurrently?: number;
  /**
   * Called when the consumer can no longer do its job: a destination threw something other than
   * DestinationUnavailable, or kafkajs crashed and will not restart. The process should exit
   * non-zero; the batch in hand stays uncommitted.
   */
  onFatal?: (error: Error) => void;
  /** How a batch is tried again while its destination is unavailable (DestinationUnavailable). */
  unavailableBackoff?: { baseDelayMs: number; maxDelayMs: number };
  random?: () => number;
  /** Told of each parked event: `retried` or `dead_lettered` with the reason (the live debugger). */
  outcomes?: OutcomeRecorder;
  /**
   * Each account's regulated subjects: their events are taken out of every batch before every
   * attempt (withoutRegulatedEvents), and a batch whose accounts' subjects cannot be read is
   * held. Unset: nothing is taken out (a consumer without a control plane).
   */
  regulations?: RegulationSource;
}

export interface RunningConsumer {
  /** Stops fetching, lets the batches in hand finish and commit, and leaves the groups. */
  stop(): Promise<void>;
  /** Resolves once both consumers (outbox and retries) have joined their groups. */
  joined: Promise<void>;
  /**
   * True while both consumers are members of their groups and no fatal error happened: false
   * before they joined, while kafkajs restarts one after a crash, and after a fatal error.
   */
  running(): boolean;
  /** Since when the destination has been unavailable, while a batch waits for it. */
  unavailableSince(): Date | undefined;
}

/** The retry consumer's group: its own position in the retry topic. */
export const retryGroupFor = (groupId: string) => `${groupId}.retry`;

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

/** What deliverAndPark needs of kafkajs's batch. */
interface BatchControl {
  heartbeat(): Promise<void>;
  /** Waits, heartbeating; false when the batch should be given up (stopping, partition lost). */
  pause(ms: number): Promise<boolean>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function batchControl(payload: {
  heartbeat(): Promise<void>;
  isRunning(): boolean;
  isStale(): boolean;
}): BatchControl {
  return {
    heartbeat: payload.heartbeat,
    pause: async (ms) => {
      const until = Date.now() + ms;
      while (Date.now() < until) {
        if (!payload.isRunning() || payload.isStale()) return false;
        await sleep(Math.min(1000, until - Date.now()));
        await payload.heartbeat().catch(() => undefined);
      }
      return payload.isRunning() && !payload.isStale();
    },
  };
}

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
  const backoff = options.unavailableBackoff ?? { baseDelayMs: 500, maxDelayMs: 30_000 };
  if (destination.openCircuits) {
    const open = destination.openCircuits.bind(destination);
    metrics?.watchCircuits(destination.kind, open);
  }
  if (destination.warehouseHealth) metrics?.watchWarehouses(destination.warehouseHealth.bind(destination));
  const producer: Producer = createProducer(kafka);
  await producer.connect();
  let fatalError: Error | undefined;
  let unavailableSince: Date | undefined;

  const fail = (error: Error): Error => {
    if (!fatalError) {
      fatalError = error;
      logger.error('delivery stopped: unexpected error', {
        destination: destination.kind,
        error: error.message,
      });
      options.onFatal?.(error);
    }
    return fatalError;
  };

  const park = async (failures: readonly FailedDelivery[]): Promise<void> => {
    const retries: Message[] = [];
    const deadLetters: Message[] = [];
    const deadLetterReasons: string[] = [];
    const now = Date.now();
    const held = new Map<string, number>();
    for (const failure of failures) {
      const { message } = failure;
      const hold = failure.holdUntilAvailable === true;
      const attempt = attemptAfter(headerText(message.headers, deliveryHeaders.attempt));
      const toRetry = hold || shouldRetry(failure.retryable, attempt, policy);
      const headers = {
        [deliveryHeaders.destination]: destination.kind,
        [deliveryHeaders.target]: failure.target,
        // A hold is the target's outage, not a try of the record: it does not use an attempt up.
        [deliveryHeaders.attempt]: String(hold ? attempt - 1 : attempt),
        [deliveryHeaders.reason]: failure.reason,
        [deliveryHeaders.origin]:
          headerText(message.headers, deliveryHeaders.origin) ??
          `${message.topic}/${message.partition}/${message.offset}`,
        ...(hold ? { [deliveryHeaders.held]: 'true' } : {}),
        // A retry goes on in the trace of the request that sent the record.
        ...traceHeadersOf(message.headers),
      };
      const record = { key: message.key, value: failure.value };
      if (toRetry) {
        // A held record is due when its target's breaker lets a probe through (retryAfterMs),
        // never later for having been held often.
        const next =
          now +
          (hold
            ? retryDelayMs(policy, 1, failure.retryAfterMs, random)
            : retryDelayMs(policy, attempt, failure.retryAfterMs, random));
        retries.push({ ...record, headers: { ...headers, [deliveryHeaders.nextAttemptAt]: String(next) } });
      } else {
        deadLetterReasons.push(deadLetterReason(failure.retryable, failure.reason));
        deadLetters.push({
          ...record,
          headers: {
            ...headers,
            [deliveryHeaders.permanent]: String(!failure.retryable),
            [deliveryHeaders.deadLetteredAt]: new Date(now).toISOString(),
          },
        });
      }
      if (options.outcomes) {
        const envelope = parseOutboxEnvelope(failure.value);
        const integrationId = failure.target === destination.kind ? null : failure.target;
        if (envelope && !toRetry && isQuarantineReason(failure.reason)) {
          // Kept out by the plan's policy, not failed: the debugger names the violations.
          for (const { reason, messageIds } of quarantinedOutcomes(envelope))
            recordOutcome(options.outcomes, envelope.writeKeyId, messageIds, {
              destination: destination.kind,
              integrationId,
              outcome: 'quarantined',
              reason,
            });
        } else if (envelope) {
          recordOutcome(
            options.outcomes,
            envelope.writeKeyId,
            envelope.events.map((event) => event.messageId),
            {
              destination: destination.kind,
              integrationId,
              outcome: toRetry ? 'retried' : 'dead_lettered',
              reason: failure.reason,
            },
          );
        }
      }
      if (hold) {
        // The destination logged the outage once; a line per record would flood the log.
        held.set(failure.target, (held.get(failure.target) ?? 0) + 1);
        continue;
      }
      logger.warn('delivery failed', {
        destination: destination.kind,
        target: failure.target,
        attempt,
        retryable: failure.retryable,
        reason: failure.reason,
        parkedIn: toRetry ? 'retry' : 'dead-letter',
      });
    }
    for (const [target, records] of held)
      logger.info('records held until their target is available', {
        destination: destination.kind,
        target,
        records,
      });
    const topicMessages = [
      ...(retries.length > 0 ? [{ topic: topics.retry, messages: retries }] : []),
      ...(deadLetters.length > 0 ? [{ topic: topics.deadLetter, messages: deadLetters }] : []),
    ];
    if (topicMessages.length > 0) await producer.sendBatch({ topicMessages, acks: -1 });
    metrics?.parked(
      destination.kind,
      retries.length,
      deadLetterReasons,
      [...held.values()].reduce((sum, n) => sum + n, 0),
    );
  };

  /**
   * Delivers and parks one batch. False when it was given up without being handled (the
   * consumer is stopping or lost the partition while the destination was unavailable): its
   * offsets must not be committed. Heartbeats go on while it runs, so a slow destination does
   * not cost the group its member.
   */
  const deliverAndPark = async (
    messages: DeliveryMessage[],
    control: BatchControl,
    group: string,
  ): Promise<boolean> => {
    if (fatalError) throw fatalError;
    const beat = setInterval(() => void control.heartbeat().catch(() => undefined), heartbeatIntervalMs);
    try {
      for (let attempt = 1; ; attempt += 1) {
        try {
          await deliverOnce(messages, group);
          if (unavailableSince) {
            logger.info('destination available again', {
              destination: destination.kind,
              unavailableForMs: Date.now() - unavailableSince.getTime(),
            });
          }
          unavailableSince = undefined;
          return true;
        } catch (error) {
          if (!(error instanceof DestinationUnavailable)) {
            // kafkajs's own errors (a broker going away while parking) are kafkajs's to retry.
            if (error instanceof Error && error.name.startsWith('KafkaJS')) throw error;
            throw fail(error instanceof Error ? error : new Error(String(error)));
          }
          unavailableSince ??= new Date();
          const wait = retryDelayMs({ maxAttempts: Infinity, ...backoff }, attempt, 0, random);
          logger.warn('destination unavailable; the batch will be tried again', {
            destination: destination.kind,
            attempt,
            retryInMs: wait,
            error: error.message,
          });
          if (!(await control.pause(wait))) return false;
        }
      }
    } finally {
      clearInterval(beat);
    }
  };

  /** One attempt at a batch, traced as `process <topic>` in the trace of its first record. */
  const deliverOnce = (messages: DeliveryMessage[], group: string): Promise<void> =>
    withProcessSpan(
      {
        topic: messages[0]?.topic ?? topics.source,
        consumerGroup: group,
        records: messages.map((message) => message.headers),
        attributes: { 'pipeline.destination.kind': destination.kind },
      },
      () => deliverAndReport(messages),
    );

  const deliverAndReport = async (messages: DeliveryMessage[]): Promise<void> => {
    const started = performance.now();
    let handed = messages;
    if (options.regulations) {
      const regulated = await withoutRegulatedEvents(messages, options.regulations);
      metrics?.regulated(destination.kind, regulated.suppressed, regulated.deleted);
      handed = regulated.messages;
    }
    // A batch of only regulated events is handled once they are taken out: its offsets are committed.
    const report =
      handed.length > 0 ? await destination.deliver(handed) : { delivered: 0, consentSkipped: 0, failed: [] };
    if (report.failed.length > 0) await park(report.failed);
    const seconds = (performance.now() - started) / 1000;
    metrics?.delivered(destination.kind, report.delivered, report.consentSkipped);
    metrics?.batchHandled(destination.kind, seconds);
    logger.debug('batch handled', {
      destination: destination.kind,
      count: messages.length,
      delivered: report.delivered,
      failed: report.failed.length,
      durationMs: Math.round(seconds * 1000),
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

  const sessionTimeoutMs = options.sessionTimeoutMs ?? 30_000;
  const heartbeatIntervalMs = Math.min(3000, Math.floor(sessionTimeoutMs / 3));
  const consumers: Consumer[] = [];
  const members = new Map<string, boolean>();
  const start = async (
    group: string,
    topic: string,
    eachBatch: (consumer: Consumer) => Parameters<Consumer['run']>[0],
  ): Promise<Promise<void>> => {
    const consumer = kafka.consumer({
      groupId: group,
      maxWaitTimeInMs: options.maxWaitTimeInMs ?? 500,
      sessionTimeout: sessionTimeoutMs,
      heartbeatInterval: heartbeatIntervalMs,
      // A batch that throws is retried with backoff up to ~30 s, then the consumer restarts and
      // re-reads from the last committed offset.
      retry: { initialRetryTime: 300, maxRetryTime: 30000, retries: 8 },
    });
    consumers.push(consumer);
    members.set(group, false);
    const joined = new Promise<void>((resolve) => {
      consumer.on(consumer.events.GROUP_JOIN, (event) => {
        members.set(group, true);
        logger.info('consumer joined group', {
          groupId: group,
          memberAssignment: event.payload.memberAssignment,
        });
        resolve();
      });
    });
    consumer.on(consumer.events.STOP, () => members.set(group, false));
    consumer.on(consumer.events.CRASH, (event) => {
      members.set(group, false);
      logger.error('consumer crashed', {
        groupId: group,
        error: event.payload.error.message,
        restart: event.payload.restart,
      });
      if (!event.payload.restart) fail(event.payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: options.fromBeginning ?? true });
    await consumer.run(eachBatch(consumer));
    return joined;
  };

  const outboxJoined = await start(groupId, topics.source, (consumer) => ({
    autoCommit: false,
    partitionsConsumedConcurrently: options.partitionsConcurrently ?? 1,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      const messages = toMessages(batch);
      const last = messages[messages.length - 1];
      if (!last || !isRunning() || isStale()) return;
      if (!(await deliverAndPark(messages, batchControl({ heartbeat, isRunning, isStale }), groupId))) return;
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
      const control = batchControl({ heartbeat, isRunning, isStale });
      let next = 0;
      while (next < messages.length) {
        if (!isRunning() || isStale()) return;
        const head = messages[next];
        if (!head) return;
        const wait = dueAt(head) - Date.now();
        if (wait > 0) {
          // Records wait in order: a later one is not attempted before the head of its
          // partition, which delays it by at most the longest backoff.
          if (!(await control.pause(wait))) return;
          continue;
        }
        let end = next + 1;
        while (end < messages.length && dueAt(messages[end] as DeliveryMessage) <= Date.now()) end += 1;
        const due = messages.slice(next, end);
        if (!(await deliverAndPark(due, control, retryGroupFor(groupId)))) return;
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
    running: () => !fatalError && [...members.values()].every(Boolean),
    unavailableSince: () => unavailableSince,
    stop: async () => {
      await Promise.all(consumers.map((consumer) => consumer.disconnect()));
      await producer.disconnect();
      await destination.close?.();
    },
  };
}
