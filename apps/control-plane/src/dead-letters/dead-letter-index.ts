import type { Consumer, IHeaders, Kafka } from 'kafkajs';
import { QueryFailedError, type DataSource } from 'typeorm';
import { deadLetterOf, deadLetterReasonCode, deliveryTopicsFor } from '@pipeline/destinations';
import { envelopeWith, outboxKey, parseOutboxEnvelope, type OutboxEnvelope } from '@pipeline/events';
import { ensureTopics } from '@pipeline/kafka';
import type { Logger } from '@pipeline/logger';
import type { EventIdentity, RegulatedSubjects } from '@pipeline/tenancy';
import { indexQuarantined } from './quarantined-events';
import { previewOf } from './dead-letter-preview';
import { DeadLetterRetention } from './dead-letter-retention';
import { defaultDeadLetterLimits, type DeadLetterLimits } from './dead-letter-limits';

/** A record of a kind's dead-letter topic, as the index's consumer reads it. */
export interface IndexedRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
  /** The record's Kafka timestamp (ms since the epoch, as a string). */
  timestamp?: string;
}

/**
 * What indexing one record did: a new row, an updated one, the same record again, or nothing
 * (`regulated`: every event of it was a regulated subject's).
 */
export type IndexOutcome = 'inserted' | 'updated' | 'duplicate' | 'not_an_envelope' | 'refused' | 'regulated';

/** How the index decides a regulated subject's events (RegulatedSubjects, for one account). */
export type DeadLetterRegulation = Pick<RegulatedSubjects, 'decide'>;

/** What a row of the index holds of its record's events, as the list and the replay read them. */
export interface StoredEvents {
  recordValue: Buffer;
  messageIds: string[];
  /** The preview's events as JSON (dead-letter-preview.ts). */
  preview: string;
  eventCount: number;
}

/** The row's columns for an envelope whose record is `value`: the one place they are computed. */
export function storedEventsOf(envelope: OutboxEnvelope, value: Buffer): StoredEvents {
  const preview = previewOf(envelope.events);
  return {
    recordValue: value,
    messageIds: envelope.events.map((event) => event.messageId),
    preview: JSON.stringify(preview.events),
    eventCount: preview.eventCount,
  };
}

const identityOf = (event: unknown): EventIdentity =>
  event !== null && typeof event === 'object' ? (event as EventIdentity) : {};

/**
 * The record without the events `regulation` decides, or null when it decides none (the
 * record stays byte for byte). The kept envelope is serialized as ingestion serializes one
 * (JSON.stringify, toOutboxEnvelopes). Its key is the kept envelope's outboxKey when the first
 * event (whose anonymous or user id outboxKey took) is removed or the key names a regulated id:
 * no id of a removed event stays in it. `value` is null when no event is left.
 */
export function withoutRegulated(
  envelope: OutboxEnvelope,
  key: Buffer | null,
  regulation: DeadLetterRegulation,
): {
  envelope: OutboxEnvelope;
  value: Buffer | null;
  key: Buffer | null;
  removedMessageIds: string[];
} | null {
  const receivedAtMs = Date.parse(envelope.receivedAt);
  const kept: number[] = [];
  const removedMessageIds: string[] = [];
  let firstRemoved = false;
  envelope.events.forEach((event, index) => {
    if (regulation.decide(identityOf(event), receivedAtMs) === null) kept.push(index);
    else {
      removedMessageIds.push(event.messageId);
      if (index === 0) firstRemoved = true;
    }
  });
  if (removedMessageIds.length === 0) return null;
  const left = envelopeWith(envelope, kept);
  if (kept.length === 0) return { envelope: left, value: null, key: null, removedMessageIds };
  return {
    envelope: left,
    value: Buffer.from(JSON.stringify(left), 'utf8'),
    key:
      key !== null && (firstRemoved || keyNamesRegulated(envelope, key, regulation))
        ? Buffer.from(outboxKey(left), 'utf8')
        : key,
    removedMessageIds,
  };
}

/** Whether a record key (`<accountId>:<id>`, or a bare id) holds an id the regulation decides. */
function keyNamesRegulated(envelope: OutboxEnvelope, key: Buffer, regulation: DeadLetterRegulation): boolean {
  const text = key.toString('utf8');
  const prefix = `${envelope.accountId}:`;
  const id = text.startsWith(prefix) ? text.slice(prefix.length) : text;
  return regulation.decide({ userId: id, anonymousId: id }, Date.parse(envelope.receivedAt)) !== null;
}

const seenAtOf = (deadLetteredAt: string | undefined, timestamp: string | undefined): Date => {
  for (const candidate of [deadLetteredAt, timestamp !== undefined ? Number(timestamp) : undefined]) {
    if (candidate === undefined) continue;
    const at = new Date(candidate);
    if (!Number.isNaN(at.getTime())) return at;
  }
  return new Date();
};

/**
 * A PostgreSQL refusal of this record's own data (class 22, data exception: a NUL in a
 * reason, an account id that is no uuid; class 23, integrity: an account that is not in this
 * control plane): no retry can index it. Anything else (the database away) is retried.
 */
const refusesTheRecord = (error: unknown): boolean => {
  const code = error instanceof QueryFailedError ? (error.driverError as { code?: string }).code : undefined;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('23'));
};

/**
 * The dead-letter index: each dead-lettered outbox record of an account, one row per account,
 * target and origin (docs/management-api.md, "Dead letters"). A replayed record that
 * dead-letters again updates its row (count + 1, back to `pending`, first seen kept); the same
 * Kafka record read twice (a rebalance, a restart before the commit) changes nothing.
 *
 * Each row keeps the record (to replay it) beside its preview (what the list shows), and an
 * account keeps at most `maxPerAccount` rows: a new one beyond that removes the account's
 * least recently seen (the dead-letter topic still holds them for the operator CLI).
 */
export class DeadLetterIndex {
  constructor(
    private readonly dataSource: DataSource,
    private readonly logger: Logger,
    private readonly limits: Pick<DeadLetterLimits, 'maxPerAccount'> = defaultDeadLetterLimits,
    /**
     * The account's regulated subjects: their events are dropped before a row is stored, so a
     * record dead-lettered before a regulation and indexed after its erasure does not bring
     * them back. Throwing (the lookup failed) leaves the record for a later try.
     */
    private readonly regulationOf?: (accountId: string) => Promise<DeadLetterRegulation>,
  ) {}

  async index(kind: string, record: IndexedRecord): Promise<IndexOutcome> {
    const parsed = parseOutboxEnvelope(record.value);
    if (!parsed || !record.value) {
      // The operator CLI (`dead-letters list`) still shows it; it belongs to no account.
      this.logger.debug('dead letter skipped: not an outbox envelope', {
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
      });
      return 'not_an_envelope';
    }
    let envelope = parsed;
    let value = record.value;
    let key = record.key;
    if (this.regulationOf) {
      const regulation = await this.regulationOf(envelope.accountId).catch((error: unknown) => {
        this.logger.warn('dead letter not indexed yet: the regulated subjects cannot be read', {
          accountId: envelope.accountId,
          topic: record.topic,
          partition: record.partition,
          offset: record.offset,
          error: (error as Error).message,
        });
        throw error;
      });
      const left = withoutRegulated(envelope, key, regulation);
      if (left) {
        if (left.value === null) return 'regulated';
        ({ envelope, value, key } = { envelope: left.envelope, value: left.value, key: left.key });
      }
    }
    const letter = deadLetterOf(record);
    const seenAt = seenAtOf(letter.deadLetteredAt, record.timestamp);
    const target = letter.target ?? kind;
    const origin = letter.origin ?? `${record.topic}/${record.partition}/${record.offset}`;
    const stored = storedEventsOf(envelope, value);
    const reasonCode = deadLetterReasonCode(letter);
    try {
      const row = await this.dataSource.transaction(async (manager) => {
        const rows: { id: string; inserted: boolean }[] = await manager.query(
          `INSERT INTO dead_letters AS d (account_id, destination, target, origin, reason, reason_code, attempts,
           permanent, first_seen_at, last_seen_at, message_ids, record_key, record_value, kafka_topic,
           kafka_partition, kafka_offset, preview, event_count, write_key_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
         ON CONFLICT (account_id, target, origin) DO UPDATE SET
           destination = EXCLUDED.destination,
           reason = EXCLUDED.reason,
           reason_code = EXCLUDED.reason_code,
           attempts = EXCLUDED.attempts,
           permanent = EXCLUDED.permanent,
           last_seen_at = GREATEST(d.last_seen_at, EXCLUDED.last_seen_at),
           dead_letter_count = d.dead_letter_count + 1,
           status = 'pending',
           message_ids = EXCLUDED.message_ids,
           record_key = EXCLUDED.record_key,
           record_value = EXCLUDED.record_value,
           kafka_topic = EXCLUDED.kafka_topic,
           kafka_partition = EXCLUDED.kafka_partition,
           kafka_offset = EXCLUDED.kafka_offset,
           preview = EXCLUDED.preview,
           event_count = EXCLUDED.event_count,
           write_key_id = EXCLUDED.write_key_id
         -- The same record again (or an older one, read after a reset): nothing changes.
         WHERE d.kafka_topic <> EXCLUDED.kafka_topic
            OR d.kafka_partition <> EXCLUDED.kafka_partition
            OR d.kafka_offset < EXCLUDED.kafka_offset
         RETURNING id, (xmax = 0) AS inserted`,
          [
            envelope.accountId,
            kind,
            target,
            origin,
            letter.reason ?? '',
            reasonCode,
            Number.isInteger(letter.attempts) ? letter.attempts : 0,
            letter.permanent,
            seenAt,
            stored.messageIds,
            key,
            stored.recordValue,
            record.topic,
            record.partition,
            record.offset,
            stored.preview,
            stored.eventCount,
            envelope.writeKeyId,
          ],
        );
        const [written] = rows;
        // The quarantine's rows of this dead letter, in the same transaction (quarantined-events.ts).
        if (written)
          await indexQuarantined(manager, { ...written, reasonCode, destination: kind, target }, envelope);
        return written;
      });
      if (row?.inserted) await this.keepWithinCap(envelope.accountId);
      return row ? (row.inserted ? 'inserted' : 'updated') : 'duplicate';
    } catch (error) {
      if (!refusesTheRecord(error)) throw error;
      // One tenant's bad record must not stall the others': logged, and the index goes on.
      this.logger.warn('dead letter not indexed: the database refuses the record', {
        topic: record.topic,
        partition: record.partition,
        offset: record.offset,
        error: (error as Error).message,
      });
      return 'refused';
    }
  }

  /** Removes the account's least recently seen rows beyond its cap (one new row: one old one). */
  private async keepWithinCap(accountId: string): Promise<void> {
    await this.dataSource.query(
      `DELETE FROM dead_letters WHERE id IN (
         SELECT id FROM dead_letters WHERE account_id = $1
         ORDER BY last_seen_at DESC, id DESC OFFSET $2 LIMIT 100)`,
      [accountId, this.limits.maxPerAccount],
    );
  }
}

export interface DeadLetterIndexerOptions {
  kafka: Kafka;
  dataSource: DataSource;
  logger: Logger;
  /** The delivery kinds whose dead-letter topics are read (@pipeline/catalog's deliveryKinds). */
  kinds: readonly string[];
  /** KAFKA_TOPIC_PREFIX: of the topics and of the index's consumer group. */
  topicPrefix: string;
  /** KAFKA_REPLICATION_FACTOR, for the dead-letter topics created when missing. */
  replicationFactor: number;
  /** DEAD_LETTER_INDEX_MAX_PER_ACCOUNT and _RETENTION_DAYS (default: the documented defaults). */
  limits?: DeadLetterLimits;
  /** Told of each record indexed (tests wait on it). */
  onIndexed?: (outcome: IndexOutcome) => void;
  /**
   * The account's regulated subjects (the regulation service's); their events are never
   * indexed. When it throws, the batch is not committed and is read again, as on a database
   * error. Absent: nothing is dropped.
   */
  regulationOf?: (accountId: string) => Promise<DeadLetterRegulation>;
}

/** The index's consumer group, under KAFKA_TOPIC_PREFIX. */
export const deadLetterIndexGroup = (prefix: string) => `${prefix}control-plane.dead-letter-index`;

/**
 * Reads every delivery kind's dead-letter topic into the index, in the background of the
 * control plane (like its job runner). Its own consumer group, so replicas share the topics;
 * offsets are committed only after a record is in the database. Kafka away at start is retried
 * with a growing wait, never fatal: the API lists what is indexed meanwhile.
 */
export class DeadLetterIndexer {
  private readonly index: DeadLetterIndex;
  private readonly retention: DeadLetterRetention;
  private consumer: Consumer | undefined;
  private stopped = false;
  private running: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private wakeRetry: (() => void) | undefined;

  constructor(private readonly options: DeadLetterIndexerOptions) {
    const limits = options.limits ?? defaultDeadLetterLimits;
    this.index = new DeadLetterIndex(options.dataSource, options.logger, limits, options.regulationOf);
    this.retention = new DeadLetterRetention(options.dataSource, options.logger, limits.retentionDays);
  }

  start(): void {
    this.retention.start();
    this.running ??= this.run();
  }

  private async run(): Promise<void> {
    const { kafka, kinds, topicPrefix, logger } = this.options;
    const topics = new Map(
      kinds.map((kind) => [deliveryTopicsFor(kind, topicPrefix).deadLetter.topic, kind]),
    );
    for (let wait = 1000; !this.stopped; wait = Math.min(wait * 2, 30_000)) {
      const consumer = kafka.consumer({ groupId: deadLetterIndexGroup(topicPrefix) });
      try {
        await ensureTopics(
          kafka,
          kinds.map((kind) => deliveryTopicsFor(kind, topicPrefix).deadLetter),
          { replicationFactor: this.options.replicationFactor, logger },
        );
        if (this.stopped) return;
        this.consumer = consumer;
        // kafkajs restarts a crashed consumer itself unless the error is not retriable: then the
        // index starts over (a new consumer), instead of silently standing still.
        consumer.on(consumer.events.CRASH, ({ payload }) => {
          if (payload.restart || this.stopped) return;
          logger.error('dead-letter index stopped; starting it again', { error: payload.error.message });
          this.running = this.restart(consumer);
        });
        await consumer.connect();
        await consumer.subscribe({ topics: [...topics.keys()], fromBeginning: true });
        await consumer.run({
          eachBatchAutoResolve: false,
          eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
            const kind = topics.get(batch.topic) ?? batch.topic;
            for (const message of batch.messages) {
              if (!isRunning() || isStale()) return;
              const outcome = await this.index.index(kind, {
                ...message,
                headers: message.headers ?? {},
                topic: batch.topic,
                partition: batch.partition,
              });
              resolveOffset(message.offset);
              this.options.onIndexed?.(outcome);
              await heartbeat();
            }
          },
        });
        logger.info('dead-letter index started', {
          topics: topics.size,
          group: deadLetterIndexGroup(topicPrefix),
        });
        return;
      } catch (error) {
        this.consumer = undefined;
        await consumer.disconnect().catch(() => undefined);
        if (this.stopped) return;
        logger.warn('dead-letter index cannot start yet; trying again', {
          retryInMs: wait,
          error: (error as Error).message,
        });
        await new Promise<void>((resolve) => {
          this.wakeRetry = resolve;
          this.retryTimer = setTimeout(resolve, wait);
        });
      }
    }
  }

  private async restart(crashed: Consumer): Promise<void> {
    this.consumer = undefined;
    await crashed.disconnect().catch(() => undefined);
    if (!this.stopped) await this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.retention.stop();
    clearTimeout(this.retryTimer);
    this.wakeRetry?.();
    await this.running;
    await this.consumer?.disconnect();
  }
}
