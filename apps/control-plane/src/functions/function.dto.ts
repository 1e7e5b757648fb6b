import type { FunctionKind, FunctionTargetType } from './function.entity';

// The management API's function bodies and answers (docs/management-api.md#functions).

export type { FunctionKind, FunctionTargetType };

/**
 * @minLength 1
 * @maxLength 200
 */
export type FunctionName = string;

/** @maxLength 2000 */
export type FunctionDescription = string;

/**
 * An ES module exporting `transform(event, ctx)`: at most 64 KiB of UTF-8 (checked in bytes by
 * the service: 400 `validation_failed`).
 * @minLength 1
 */
export type FunctionCodeText = string;

export interface CreateFunctionBody {
  name: FunctionName;
  /** `destination`: binds to an integration or the warehouse; `source`: to a write key. */
  kind: FunctionKind;
  /** The first draft. */
  code: FunctionCodeText;
  description?: FunctionDescription;
}

export interface UpdateFunctionBody {
  name?: FunctionName;
  description?: FunctionDescription;
  /** Replaces the draft; published versions never change. */
  code?: FunctionCodeText;
}

/** A function as lists show it: without its draft. */
export interface FunctionSummary {
  /** @format uuid */
  id: string;
  name: string;
  description: string;
  kind: FunctionKind;
  /** sha256 (hex) of the draft's code. */
  draftCodeHash: string;
  /** The newest published version's number; null before the first publish. */
  latestVersion: number | null;
  /** The newest published version's id; null before the first publish. */
  latestVersionId: string | null;
  /** Whether the draft differs from the newest version (always true before the first publish). */
  draftChanged: boolean;
  /** Targets (integrations, write keys, the warehouse) that bind one of its versions. */
  boundTargets: number;
  createdAt: string;
  updatedAt: string;
}

/** A function with its draft code. */
export interface FunctionView extends FunctionSummary {
  draftCode: string;
}

export interface FunctionAnswer {
  data: FunctionView;
}

/** A published version as lists show it: without its code. */
export interface FunctionVersionSummary {
  /** @format uuid */
  id: string;
  /** @format uuid */
  functionId: string;
  /** 1 for the first publish, then one more each time. */
  version: number;
  /** sha256 (hex) of `code` as UTF-8. */
  codeHash: string;
  createdAt: string;
}

export interface FunctionVersionView extends FunctionVersionSummary {
  code: string;
}

export interface FunctionVersionAnswer {
  data: FunctionVersionView;
}

export interface BindFunctionBody {
  /**
   * A published version of one of the account's functions (rollback: an older one).
   * @minLength 1
   * @maxLength 64
   */
  functionVersionId: string;
}

/** The version a target runs. */
export interface FunctionBindingView {
  targetType: FunctionTargetType;
  /** The integration's or write key's id; null for the account's warehouse. */
  targetId: string | null;
  /** @format uuid */
  functionId: string;
  /** @format uuid */
  functionVersionId: string;
  version: number;
  codeHash: string;
  createdAt: string;
  updatedAt: string;
}

export interface FunctionBindingAnswer {
  data: FunctionBindingView;
}

/** An event to test on: any JSON object, as the tracking API takes it. */
export type TestEventInput = { [member: string]: unknown };

export interface TestFunctionBody {
  /** Code to run instead of the draft (not saved); excludes `versionId`. */
  code?: FunctionCodeText;
  /**
   * A published version of this function to run instead of the draft; excludes `code`.
   * @maxLength 64
   */
  versionId?: string;
  /**
   * Events to run on (at most 100); excludes `writeKeyId`.
   * @maxItems 100
   */
  events?: TestEventInput[];
  /**
   * Run on the debugger's newest accepted events of this write key (of the account) instead.
   * @maxLength 64
   */
  writeKeyId?: string;
  /**
   * With `writeKeyId`: how many of its newest events, 1-50 (default 10).
   * @isInt
   * @minimum 1
   * @maximum 50
   */
  limit?: number;
  /** `ctx.destination` for a destination function (an app type such as `amplitude`); default `warehouse`. */
  destination?: string;
}

/** What the function made of one input event. */
export interface TestEventResult {
  input: TestEventInput;
  result: 'ok' | 'dropped' | 'error';
  /** `ok`: the events it returned (one, or up to 10). */
  events?: unknown[];
  /** `error`: `function_error`, `function_output_invalid`, or the batch's `function_timeout`, `function_memory`, `function_crashed`. */
  error?: { code: string; message: string };
}

export interface FunctionTestLog {
  /** Index of the input event the line was logged for. */
  event: number;
  level: 'log' | 'info' | 'warn' | 'error';
  message: string;
}

export interface FunctionTestView {
  /** The runtime that ran it (`isolated-vm`, `quickjs`). */
  runtime: string;
  /** The version run; null for the draft or pasted code. */
  versionId: string | null;
  /** `failed`: the batch as a whole failed (every event carries the batch's error). */
  outcome: 'completed' | 'failed';
  results: TestEventResult[];
  logs: FunctionTestLog[];
  /** Log lines beyond the caps, counted and not kept. */
  logsDropped: number;
  cpuMicros: number;
}

export interface FunctionTestAnswer {
  data: FunctionTestView;
}
