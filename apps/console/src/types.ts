// The shapes the console reads. The REST API's are its own, generated from docs/openapi.json into
// generated/openapi.ts by the build (`nx run @pipeline/console:generate`), so they cannot drift
// from the API. The MCP tools' results are not in that document and are written here
// (docs/tasks-and-mcp.md).
import type { components } from './generated/openapi';

type Schemas = components['schemas'];

export type SyncError = Schemas['SyncError'];
export type AppItem = Schemas['AppListItem'];
export type AppDetail = Schemas['AppDetail'];
export type AppType = Schemas['AppTypeView'];
export type SourceItem = Schemas['SourceListItem'];
export type SourceDetail = Schemas['SourceDetail'];
export type IntegrationDetail = Schemas['IntegrationDetail'];
export type IntegrationItem = Schemas['IntegrationListItem'];
export type Job = Schemas['JobView'];
export type WriteKey = Schemas['WriteKeyView'];
export type DebugEvent = Schemas['DebugEvent'];
export type Delivery = Schemas['DeliveryOutcomeView'];
export type DebugPlanDecision = Schemas['DebugPlanDecisionView'];
export type DailyUsage = Schemas['DailyUsageItem'];
export type PrecheckResult = Schemas['PrecheckResult'];
export type DeadLetter = Schemas['DeadLetterView'];

/** A dry run's answer: rows per table per warehouse, dead letters, destinations' deletion support. */
export type DryRun = Schemas['RegulationDryRun']['data'];
export type Regulation = Schemas['RegulationView'];
export type RegulationTarget = Schemas['RegulationTargetView'];
export type Suppression = Schemas['SuppressionView'];

/** A page of an MCP list tool (`tasks_list`): the REST lists' envelope. */
export interface List<T> {
  data: T[];
  pagination?: { total: number; limit: number; offset: number; nextOffset: number | null };
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
