import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** `pending` -> `running` -> `succeeded` / `failed`; `pending` or `running` -> `cancelled`. */
export type TaskRunStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export const activeRunStatuses: readonly TaskRunStatus[] = ['pending', 'running'];

export type StepStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';

export interface StepProgress {
  id: string;
  name: string;
  status: StepStatus;
  startedAt: string | null;
  finishedAt: string | null;
}

/** Step-by-step progress of a run. */
export interface RunProgress {
  steps: StepProgress[];
  completedSteps: number;
  totalSteps: number;
  currentStep: string | null;
}

export interface RunError {
  code: string;
  message: string;
  step?: string;
}

/** One execution of a task; also the work queue's item. */
@Entity({ name: 'task_runs' })
export class TaskRunEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'task_id', type: 'uuid' })
  taskId!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'text' })
  status!: TaskRunStatus;

  /** The effective params of this run: the task's, overridden by the start's run-time params. */
  @Column({ type: 'jsonb' })
  params!: Record<string, unknown>;

  @Column({ type: 'jsonb' })
  progress!: RunProgress | Record<string, never>;

  /** The report of a succeeded run. */
  @Column({ type: 'jsonb', nullable: true })
  result!: Record<string, unknown> | null;

  @Column({ type: 'jsonb', nullable: true })
  error!: RunError | null;

  @Column({ type: 'integer' })
  attempts!: number;

  @Column({ name: 'worker_id', type: 'text', nullable: true })
  workerId!: string | null;

  @Column({ name: 'heartbeat_at', type: 'timestamptz', nullable: true })
  heartbeatAt!: Date | null;

  @Column({ name: 'cancel_requested_at', type: 'timestamptz', nullable: true })
  cancelRequestedAt!: Date | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt!: Date | null;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
