import { Column, Entity, PrimaryGeneratedColumn } from 'typeorm';

export type DeadLetterStatus = 'pending' | 'replayed' | 'discarded';
export const deadLetterStatuses: readonly DeadLetterStatus[] = ['pending', 'replayed', 'discarded'];

/** One dead-lettered record of an account for one target, as the dead-letter index keeps it. */
@Entity({ name: 'dead_letters' })
export class DeadLetterEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  /** The delivery kind (`warehouse`, `amplitude`, ...). */
  @Column({ type: 'text' })
  destination!: string;

  /** The integration id (forwarding kinds), `warehouse:<id>` or the kind itself. */
  @Column({ type: 'text' })
  target!: string;

  /** The outbox record it came from: `<topic>/<partition>/<offset>`. */
  @Column({ type: 'text' })
  origin!: string;

  @Column({ type: 'text' })
  reason!: string;

  @Column({ name: 'reason_code', type: 'text' })
  reasonCode!: string;

  @Column({ type: 'integer' })
  attempts!: number;

  @Column({ type: 'boolean' })
  permanent!: boolean;

  @Column({ name: 'dead_letter_count', type: 'integer' })
  deadLetterCount!: number;

  @Column({ name: 'first_seen_at', type: 'timestamptz' })
  firstSeenAt!: Date;

  @Column({ name: 'last_seen_at', type: 'timestamptz' })
  lastSeenAt!: Date;

  @Column({ type: 'text' })
  status!: DeadLetterStatus;

  @Column({ name: 'replayed_at', type: 'timestamptz', nullable: true })
  replayedAt!: Date | null;

  @Column({ name: 'discarded_at', type: 'timestamptz', nullable: true })
  discardedAt!: Date | null;

  @Column({ name: 'message_ids', type: 'text', array: true })
  messageIds!: string[];

  /** The view's events as JSON (dead-letter-preview.ts); null for a row indexed before it was kept. */
  @Column({ type: 'text', nullable: true })
  preview!: string | null;

  /** Events in the record; null for a row indexed before it was kept (`messageIds` counts them). */
  @Column({ name: 'event_count', type: 'integer', nullable: true })
  eventCount!: number | null;

  /** The write key the record's events came in with (its event limits count replays). */
  @Column({ name: 'write_key_id', type: 'text', nullable: true })
  writeKeyId!: string | null;

  @Column({ name: 'record_key', type: 'bytea', nullable: true })
  recordKey!: Buffer | null;

  @Column({ name: 'record_value', type: 'bytea' })
  recordValue!: Buffer;

  @Column({ name: 'kafka_topic', type: 'text' })
  kafkaTopic!: string;

  @Column({ name: 'kafka_partition', type: 'integer' })
  kafkaPartition!: number;

  /** A bigint: TypeORM reads it as a string. */
  @Column({ name: 'kafka_offset', type: 'bigint' })
  kafkaOffset!: string;
}
