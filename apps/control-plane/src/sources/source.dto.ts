import type { WarehouseStatus } from '../warehouse-registry/warehouse.entity';
import type { AppRole } from '../apps/app.entity';
import type { JobView } from '../jobs/job.dto';
import type { ResourceState } from '../http/resource-state';
import type { IntegrationStatus, SyncFrequencyUnit } from './source.entity';

/**
 * The error of the last failed sync: a vendor's answer or a documented code, or `internal_error`
 * with a reference to quote (the detail stays in the logs).
 */
export interface SyncError {
  message: string;
  code?: string;
  /** @format date-time */
  at?: string;
}

export interface SourceListItem {
  /** @format uuid */
  id: string;
  /** @format uuid */
  accountId: string;
  /** @format uuid */
  appId: string;
  appName: string;
  syncType: string;
  importTasks: string[];
  /** Human-readable, from value and unit: `every 6 hours`, `every day`. */
  syncFrequency: string;
  /** HH:MM */
  syncAnchorTime: string;
  /** IANA time zone */
  syncAnchorTimezone: string;
  rollingPeriodDays: number;
  state: ResourceState;
  /** Import lifecycle: pending, queued, syncing, succeeded, failed, paused (docs/management-api.md, "Resources and their rules"). */
  integrationStatus: IntegrationStatus;
  /** @format date-time */
  lastSyncAt: string | null;
  lastError: SyncError | null;
  consecutiveFailures: number;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}

export interface SourceAppSummary {
  id: string;
  appType: string;
  displayName: string;
  role: AppRole[];
  state: ResourceState;
}

export interface SourceDetail extends SourceListItem {
  isActive: boolean;
  syncFrequencyValue: number;
  syncFrequencyUnit: SyncFrequencyUnit;
  /** @format date-time */
  historicalSyncStartDate: string | null;
  oneOff: boolean;
  /** Connector configuration; values under secret-looking keys are masked. */
  config: Record<string, unknown>;
  app: SourceAppSummary;
  /** Where the imported data lands. */
  warehouse: SourceWarehouse;
  /** awaiting_first_sync, first_sync_running, first_sync_failed or completed. */
  onboardingState: 'awaiting_first_sync' | 'first_sync_running' | 'first_sync_failed' | 'completed';
  latestJobId: string | null;
  activeImportJobId: string | null;
  /**
   * When the scheduler queues the next sync (the next anchored slot); null for one-off,
   * paused and deleted sources.
   * @format date-time
   */
  nextSyncAt: string | null;
}

export interface SourceCreated extends SourceDetail {
  /** The job dispatched by `oneOff` or `runNow`; null otherwise. */
  dispatchedJob: JobView | null;
}

export interface CreateSourceBody {
  /** An existing source-role app of this account. */
  appId: string;
  /** Must equal the app's appType. */
  syncType: string;
  /** Defaults to every task the sync type offers. */
  importTasks?: string[];
  /**
   * Defaults to 1 (with unit `days`). Hours: 1-8760; days: 1-365.
   * @isInt
   */
  syncFrequencyValue?: number;
  /** Defaults to `days`. */
  syncFrequencyUnit?: SyncFrequencyUnit;
  /**
   * Defaults to `00:00`.
   * @pattern ^([01][0-9]|2[0-3]):[0-5][0-9]$
   */
  syncAnchorTime?: string;
  /** IANA time zone; defaults to `UTC`. */
  syncAnchorTimezone?: string;
  /**
   * Rolling sync window in hours, stored as whole days rounded up (`rollingPeriodDays`);
   * defaults to 168 (7 days). 1-8760.
   * @isInt
   */
  rollingPeriodHours?: number;
  /** Backfill start; not in the future. */
  historicalSyncStartDate?: Date;
  /** A single sync, dispatched at once, and no schedule. */
  oneOff?: boolean;
  /** Dispatch the first sync at once. */
  runNow?: boolean;
  config?: Record<string, unknown>;
}

export interface UpdateSourceBody {
  importTasks?: string[];
  /** Replaces the configuration. */
  config?: Record<string, unknown>;
  /** false pauses the source (`inactive`, status `paused`); true resumes it (`active`, status `pending`). */
  isActive?: boolean;
}

/** The account's warehouse, where a source's data lands. */
export interface SourceWarehouse {
  /** The warehouse the account is placed on; null until the control plane has placed it. */
  warehouseId: string | null;
  /**
   * How that warehouse is doing, as the warehouse consumer last reported it: `active`, or
   * `unavailable` / `misconfigured` while rows wait for it (they are loaded once it is back).
   */
  status: WarehouseStatus | null;
  /** The account's schema in that warehouse. */
  schema: string;
  tables: string[];
}
