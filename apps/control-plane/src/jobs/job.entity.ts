import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, type ValueTransformer } from 'typeorm';

export type JobKind = 'source_sync' | 'integration_run' | 'warehouse_move';
/** The jobs an account's API shows: a warehouse move is the operator's. */
export const accountJobKinds = ['source_sync', 'integration_run'] as const;
export type AccountJobKind = (typeof accountJobKinds)[number];
export type JobTrigger = 'manual' | 'schedule' | 'one_off' | 'onboarding';
export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'cancelled';

// pg returns bigint as a string; row counts stay far below 2^53.
const bigintAsNumber: ValueTransformer = {
  to: (value: number) => value,
  from: (value: string | null) => (value === null ? 0 : Number(value)),
};

/** A unit of sync work dispatched for a source (or an integration). */
@Entity({ name: 'jobs' })
export class JobEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ name: 'source_id', type: 'uuid', nullable: true })
  sourceId!: string | null;

  @Column({ name: 'integration_id', type: 'uuid', nullable: true })
  integrationId!: string | null;

  @Column({ type: 'text' })
  kind!: JobKind;

  @Column({ type: 'text' })
  trigger!: JobTrigger;

  @Column({ type: 'text' })
  status!: JobStatus;

  @Column({ name: 'rows_read', type: 'bigint', transformer: bigintAsNumber })
  rowsRead!: number;

  @Column({ name: 'rows_written', type: 'bigint', transformer: bigintAsNumber })
  rowsWritten!: number;

  @Column({ type: 'jsonb', nullable: true })
  error!: { message: string; code?: string } | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  /** Claims so far; a transient failure or a lost worker is retried until JOB_MAX_ATTEMPTS. */
  @Column({ type: 'integer', default: 0 })
  attempts!: number;

  /** A queued job is not claimed before this time (the backoff after a transient failure). */
  @Column({ name: 'run_after', type: 'timestamptz', default: () => 'now()' })
  runAfter!: Date;
}
