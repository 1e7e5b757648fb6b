// The shapes the console reads (docs/openapi.json; the debugger: docs/console.md).

export interface SyncError {
  message: string;
  code?: string;
  at?: string;
}

export interface List<T> {
  data: T[];
  pagination?: { total: number; limit: number; offset: number; nextOffset: number | null };
}

export interface AppItem {
  id: string;
  appType: string;
  displayName: string;
  role: string[];
  state: string;
  errorMessage: string | null;
  lastSyncAt: string | null;
}

export interface SourceItem {
  id: string;
  appId: string;
  appName: string;
  syncType: string;
  syncFrequency: string;
  state: string;
  integrationStatus: string;
  lastSyncAt: string | null;
  lastError: SyncError | null;
  consecutiveFailures: number;
}

export interface IntegrationItem {
  id: string;
  sourceAppName: string;
  sourceAppType: string;
  destinationAppName: string;
  destinationAppType: string;
  dataType: string;
  state: string;
  status: string;
  isActive: boolean;
  lastSyncAt: string | null;
  lastError: SyncError | null;
  consecutiveFailures: number;
  latestJobId: string | null;
}

export interface Job {
  id: string;
  kind: string;
  status: string;
  trigger: string;
  sourceId: string | null;
  integrationId: string | null;
  rowsRead: number;
  rowsWritten: number;
  error: Record<string, unknown> | null;
  attempts: number;
  notBefore: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface WriteKey {
  id: string;
  name: string;
  keyPrefix: string;
  maskedKey: string;
  allowedOrigins: string[];
  state: string;
  rateLimits?: { eventsPerSecond?: number | null; eventsPerDay?: number | null };
  createdAt: string;
  revokedAt: string | null;
}

export interface DebugEvent {
  id: string;
  receivedAt: string;
  requestId: string;
  status: 'accepted' | 'rejected';
  type: string | null;
  event: string | null;
  messageId: string | null;
  errors: { path: string; message: string; code?: string }[];
  payload: Record<string, unknown>;
}

export interface Delivery {
  destination: string;
  integrationId: string | null;
  outcome: string;
  reason: string | null;
  at: string;
}

export interface DailyUsage {
  date: string;
  totalCostUsd: number;
  storageCostUsd: number;
  queryCostUsd: number;
  syncRowsCostUsd: number;
  computeCostUsd: number;
  syncRowsTotal: number;
  /** When the metering job stored the day's figures; null when it has not. */
  meteredAt: string | null;
}

export interface Template {
  template_id: string;
  version: number;
  name: string;
  description: string;
}

export interface TaskRun {
  task_run_id: string;
  status: string;
  error?: unknown;
  result?: unknown;
  progress?: unknown;
  started_at?: string | null;
  finished_at?: string | null;
  created_at?: string;
}

export interface Task {
  task_id: string;
  template_id: string;
  title: string;
  params: Record<string, unknown>;
  created_at: string;
  latest_run: TaskRun | null;
}
