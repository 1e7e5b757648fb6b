import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export const warehouseMoveStages = [
  'queued',
  'copy',
  'verify',
  'cut_over',
  'drain',
  'retire',
  'done',
  'failed',
] as const;
/** Where a move is: each stage can be run again after a restart without harm. */
export type WarehouseMoveStage = (typeof warehouseMoveStages)[number];

/** Rows copied per table by the copy stage and by the drain's copy. */
export interface MoveProgress {
  copy?: Record<string, number>;
  drain?: Record<string, number>;
}

/** One table's comparison: rows per side, and the UTC days with rows of the source missing on the target. */
export interface TableVerification {
  sourceRows: number;
  targetRows: number;
  missingDays: string[];
}

export interface MoveVerification {
  /** `verify` before the cut-over, `drain` after it. */
  stage: 'verify' | 'drain';
  at: string;
  ok: boolean;
  tables: Record<string, TableVerification>;
}

/** An account moving from one warehouse to another, run by a `warehouse_move` job. */
@Entity({ name: 'warehouse_moves' })
export class WarehouseMoveEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  /** Null once that warehouse was deleted: only a finished move's side can be. */
  @Column({ name: 'from_warehouse_id', type: 'uuid', nullable: true })
  fromWarehouseId!: string | null;

  /** Null once that warehouse was deleted: only a finished move's side can be. */
  @Column({ name: 'to_warehouse_id', type: 'uuid', nullable: true })
  toWarehouseId!: string | null;

  /** The account's schema on the source (and on the target unless `toSchema` names another). */
  @Column({ type: 'text' })
  schema!: string;

  /** The schema on the target when it differs: the app's, on the account's own server. */
  @Column({ name: 'to_schema', type: 'text', nullable: true })
  toSchema!: string | null;

  @Column({ name: 'job_id', type: 'uuid', nullable: true })
  jobId!: string | null;

  @Column({ type: 'text' })
  stage!: WarehouseMoveStage;

  @Column({ type: 'jsonb' })
  progress!: MoveProgress;

  /** The last comparison of the two warehouses. */
  @Column({ type: 'jsonb', nullable: true })
  verification!: MoveVerification | null;

  @Column({ name: 'copy_attempts', type: 'integer' })
  copyAttempts!: number;

  @Column({ type: 'jsonb', nullable: true })
  error!: { code: string; message: string } | null;

  /** When the placement's move target was set: the consumers' wait counts from here. */
  @Column({ name: 'targeted_at', type: 'timestamptz', nullable: true })
  targetedAt!: Date | null;

  /** When the placement moved: the drain's wait counts from here. */
  @Column({ name: 'cut_over_at', type: 'timestamptz', nullable: true })
  cutOverAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;
}
