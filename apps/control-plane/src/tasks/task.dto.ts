import type { RunError, RunProgress, TaskRunStatus } from './task-run.entity';

export interface CreateTaskBody {
  /** The template (agent goal) id, e.g. `connector_health_audit`. */
  template_id: string;
  /**
   * Defaults to the template's name.
   * @minLength 1
   * @maxLength 200
   */
  title?: string;
  /** Launch-time params, validated against the template's parameter schema. */
  params?: Record<string, unknown>;
}

export interface TaskCreated {
  /** @format uuid */
  task_id: string;
}

export interface StartTaskBody {
  /** Run-time params: override the task's params for this run, validated again. */
  params?: Record<string, unknown>;
}

export interface TaskRunStarted {
  /** @format uuid */
  task_run_id: string;
  /** The run's effective params: the task's, overridden by the run-time params, with defaults. */
  params: Record<string, unknown>;
}

export interface TaskCancelResult {
  /** False when the task had no pending or running run. */
  cancelled: boolean;
  task_run_id: string | null;
}

export type GapKind = 'missing_integration' | 'missing_permission' | 'missing_data';

export interface Capability {
  /** `integration`, `permission` or `data`. */
  type: string;
  name: string;
  /** The app type an integration capability needs (empty for other capability types). */
  appType: string;
}

export interface PrecheckGap {
  kind: GapKind;
  capability: Capability;
  hint: string;
}

export interface PrecheckResult {
  ready: boolean;
  gaps: PrecheckGap[];
}

/** A run as the agent tool interface shows it. */
export interface TaskRunView {
  task_run_id: string;
  status: TaskRunStatus;
  params: Record<string, unknown>;
  progress: RunProgress | null;
  result: Record<string, unknown> | null;
  error: RunError | null;
  attempts: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export interface TaskView {
  task_id: string;
  template_id: string;
  template_version: number;
  title: string;
  params: Record<string, unknown>;
  created_at: string;
  latest_run: TaskRunView | null;
}
