import { Column, Entity } from 'typeorm';
import { AccountResourceEntity } from '../database/account-resource';

export type IntegrationRunStatus = 'pending' | 'running' | 'completed' | 'errored' | 'paused' | 'draft';

export const integrationRunStatuses: readonly IntegrationRunStatus[] = [
  'pending',
  'running',
  'completed',
  'errored',
  'paused',
  'draft',
];

export interface IntegrationTask {
  task_type: string;
  [field: string]: unknown;
}

export interface IntegrationConfig {
  global: Record<string, unknown>;
  tasks: IntegrationTask[];
}

export interface IntegrationSchedule {
  frequencyValue: number;
  frequencyUnit: 'hours' | 'days';
  rollingWindowDays: number;
}

@Entity({ name: 'integrations' })
export class IntegrationEntity extends AccountResourceEntity {
  @Column({ name: 'source_app_id', type: 'uuid', nullable: true })
  sourceAppId!: string | null;

  @Column({ name: 'destination_app_id', type: 'uuid' })
  destinationAppId!: string;

  @Column({ name: 'data_type', type: 'text' })
  dataType!: string;

  @Column({ type: 'jsonb' })
  config!: IntegrationConfig;

  @Column({ type: 'jsonb' })
  schedule!: IntegrationSchedule;

  @Column({ type: 'text' })
  status!: IntegrationRunStatus;

  @Column({ name: 'last_sync_at', type: 'timestamptz', nullable: true })
  lastSyncAt!: Date | null;

  @Column({ name: 'last_error', type: 'jsonb', nullable: true })
  lastError!: { message: string; code?: string; at?: string } | null;

  @Column({ name: 'consecutive_failures', type: 'integer' })
  consecutiveFailures!: number;

  @Column({ name: 'latest_job_id', type: 'uuid', nullable: true })
  latestJobId!: string | null;

  @Column({ name: 'historical_sync_start_date', type: 'timestamptz', nullable: true })
  historicalSyncStartDate!: Date | null;

  /** When the scheduler queues the next run; null when it is not scheduled (draft, paused, deleted, nothing scheduled to do). */
  @Column({ name: 'next_run_at', type: 'timestamptz', nullable: true })
  nextRunAt!: Date | null;
}
