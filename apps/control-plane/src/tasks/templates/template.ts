import type { DataSource } from 'typeorm';
import type { AccountWarehouses } from '../../warehouse-access/account-warehouses';

/**
 * A capability a template needs (docs/tasks-and-mcp.md#templates): a connected integration of an app type, a
 * permission of the calling API key, or data present in the account.
 */
export type Prerequisite =
  | { kind: 'integration'; appType: string; name: string; hint: string }
  | { kind: 'permission'; scope: string; name: string; hint: string }
  | { kind: 'data'; data: 'connectors' | 'warehouse_rows'; name: string; hint: string };

/** What a step sees: the account, the run's params, read access to its data, and cancellation. */
export interface StepContext<P> {
  accountId: string;
  runId: string;
  params: P;
  dataSource: DataSource;
  /** Where the account's warehouse is: steps read it through its engine's named queries. */
  warehouses: AccountWarehouses;
  /** Aborted when the run is cancelled or this worker lost it; long steps check it. */
  signal: AbortSignal;
  /** Throws when the signal is aborted. */
  checkpoint(): void;
  /** The time the run started, the reference for ages and windows. */
  now: Date;
  /** What earlier steps produced, by step id. */
  state: Record<string, unknown>;
}

export interface TemplateStep<P> {
  id: string;
  name: string;
  /** Returns what later steps read as `state[id]`; the last step returns the report. */
  run(context: StepContext<P>): Promise<unknown>;
}

/** A finding of an audit, with what to do about it. */
export interface Finding {
  severity: 'critical' | 'warning' | 'info';
  code: string;
  resource: { type: string; id?: string; name: string };
  message: string;
  recommendation: string;
}

/** An agent goal: a versioned definition in code. */
export interface TaskTemplate<P = Record<string, unknown>> {
  id: string;
  version: number;
  name: string;
  description: string;
  /** JSON Schema (draft 07) of the params; validated with ajv at creation and at start. */
  paramsSchema: Record<string, unknown>;
  prerequisites: Prerequisite[];
  steps: TemplateStep<P>[];
}

export function summarize(findings: Finding[]): { critical: number; warning: number; info: number } {
  return {
    critical: findings.filter((f) => f.severity === 'critical').length,
    warning: findings.filter((f) => f.severity === 'warning').length,
    info: findings.filter((f) => f.severity === 'info').length,
  };
}

const severityOrder = { critical: 0, warning: 1, info: 2 } as const;

export const bySeverity = (a: Finding, b: Finding) =>
  severityOrder[a.severity] - severityOrder[b.severity] || a.code.localeCompare(b.code);
