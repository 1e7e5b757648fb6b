import type { AppRole } from '../apps/app.entity';
import type { ResourceState } from '../http/resource-state';
import type { SyncError } from '../sources/source.dto';
import type { IntegrationRunStatus } from './integration.entity';

/**
 * One unit of work of an integration; `task_type` names it, the other fields are its settings:
 * `events` (tracked events forwarded as they arrive), `user_attributes` `{ fields? }`,
 * `recent_events` `{ events? }`, `source_stream` `{ stream, userIdField? }`
 * (docs/delivery-and-destinations.md, "Integration runs").
 */
export interface IntegrationTaskBody {
  /** @pattern ^[a-z][a-z0-9_]{0,63}$ */
  task_type: string;
  [field: string]: unknown;
}

export interface IntegrationConfigBody {
  /** Settings shared by every task. */
  global: Record<string, unknown>;
  /** @minItems 1 */
  tasks: IntegrationTaskBody[];
}

export interface IntegrationScheduleBody {
  /**
   * @isInt
   * @minimum 1
   * @maximum 8760
   */
  frequencyValue: number;
  frequencyUnit: 'hours' | 'days';
  /**
   * @isInt
   * @minimum 1
   * @maximum 365
   */
  rollingWindowDays: number;
}

/**
 * Whether the data the integration sends has been imported: `not_required` (no source app),
 * `missing_source` (no active source imports from the source app), `waiting` (a source exists
 * but has not completed a sync), `ready`.
 */
export type ImportDependencyStatus = 'not_required' | 'missing_source' | 'waiting' | 'ready';

export interface IntegrationListItem {
  /** @format uuid */
  id: string;
  /** @format uuid */
  accountId: string;
  sourceAppId: string | null;
  sourceAppName: string | null;
  sourceAppType: string | null;
  destinationAppId: string;
  destinationAppName: string;
  destinationAppType: string;
  dataType: string;
  config: IntegrationConfigBody;
  schedule: IntegrationScheduleBody;
  state: ResourceState;
  /** pending, running, completed, errored, paused, draft (docs/delivery-and-destinations.md, "Integration runs"). */
  status: IntegrationRunStatus;
  isActive: boolean;
  /** @format date-time */
  lastSyncAt: string | null;
  lastError: SyncError | null;
  consecutiveFailures: number;
  importDependencyStatus: ImportDependencyStatus;
  latestJobId: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

export interface IntegrationAppSummary {
  id: string;
  appType: string;
  displayName: string;
  role: AppRole[];
  state: ResourceState;
}

export interface IntegrationDetail extends IntegrationListItem {
  sourceApp: IntegrationAppSummary | null;
  destinationApp: IntegrationAppSummary;
  importDependency: {
    status: ImportDependencyStatus;
    /** Active sources importing from the source app. */
    sourceIds: string[];
  };
  /** @format date-time */
  historicalSyncStartDate: string | null;
  /** Latest import jobs of those sources. */
  triggeredImportJobIds: string[];
  /**
   * When the scheduler queues the next run; null for drafts, paused and deleted integrations
   * and those with only real-time tasks.
   * @format date-time
   */
  nextRunAt: string | null;
}

export interface CreateIntegrationBody {
  /** A destination-role app of this account. */
  destinationAppId: string;
  /**
   * What is synced, e.g. `users`, `events`, `customers`.
   * @pattern ^[a-z][a-z0-9_]{0,63}$
   */
  dataType: string;
  config: IntegrationConfigBody;
  schedule: IntegrationScheduleBody;
  /** A source-role app of this account whose imported data is sent. */
  sourceAppId?: string;
  /** Bounds the first run. */
  historicalSyncStartDate?: Date;
}

export interface UpdateIntegrationBody {
  config?: IntegrationConfigBody;
  schedule?: IntegrationScheduleBody;
  /** false pauses (status `paused`); true resumes (status `pending`, or `draft` while the destination app has no credentials). */
  isActive?: boolean;
}
