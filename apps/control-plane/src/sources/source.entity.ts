import { Column, Entity } from 'typeorm';
import { AccountResourceEntity } from '../database/account-resource';

export type SyncFrequencyUnit = 'hours' | 'days';

/**
 * Import lifecycle of a source:
 * `pending` (created, never synced) -> `queued` (a job waits) -> `syncing` (a job runs) ->
 * `succeeded` or `failed`; `paused` while the source is inactive.
 */
export type IntegrationStatus = 'pending' | 'queued' | 'syncing' | 'succeeded' | 'failed' | 'paused';

export const integrationStatuses: readonly IntegrationStatus[] = [
  'pending',
  'queued',
  'syncing',
  'succeeded',
  'failed',
  'paused',
];

@Entity({ name: 'sources' })
export class SourceEntity extends AccountResourceEntity {
  @Column({ name: 'app_id', type: 'uuid' })
  appId!: string;

  @Column({ name: 'sync_type', type: 'text' })
  syncType!: string;

  @Column({ name: 'import_tasks', type: 'text', array: true })
  importTasks!: string[];

  @Column({ name: 'sync_frequency_value', type: 'integer' })
  syncFrequencyValue!: number;

  @Column({ name: 'sync_frequency_unit', type: 'text' })
  syncFrequencyUnit!: SyncFrequencyUnit;

  @Column({ name: 'sync_anchor_time', type: 'text' })
  syncAnchorTime!: string;

  @Column({ name: 'sync_anchor_timezone', type: 'text' })
  syncAnchorTimezone!: string;

  @Column({ name: 'rolling_period_days', type: 'integer' })
  rollingPeriodDays!: number;

  @Column({ name: 'historical_sync_start_date', type: 'timestamptz', nullable: true })
  historicalSyncStartDate!: Date | null;

  @Column({ name: 'one_off', type: 'boolean' })
  oneOff!: boolean;

  @Column({ type: 'jsonb' })
  config!: Record<string, unknown>;

  @Column({ name: 'integration_status', type: 'text' })
  integrationStatus!: IntegrationStatus;

  @Column({ name: 'last_sync_at', type: 'timestamptz', nullable: true })
  lastSyncAt!: Date | null;

  @Column({ name: 'last_error', type: 'jsonb', nullable: true })
  lastError!: { message: string; code?: string; at?: string } | null;

  @Column({ name: 'consecutive_failures', type: 'integer' })
  consecutiveFailures!: number;

  @Column({ name: 'latest_job_id', type: 'uuid', nullable: true })
  latestJobId!: string | null;

  @Column({ name: 'active_import_job_id', type: 'uuid', nullable: true })
  activeImportJobId!: string | null;

  /** When the scheduler queues the next sync; null for one-off, inactive and deleted sources. */
  @Column({ name: 'next_sync_at', type: 'timestamptz', nullable: true })
  nextSyncAt!: Date | null;
}
