/**
 * The contract between the pipeline and a tenant function (docs/functions.md), independent of
 * the runtime that executes it: a module exporting `transform(event, ctx)` that returns the
 * event, `null` (drop) or an array of at most `maxOutputEvents` events; pure and synchronous.
 */

/** One version of a function's code, as a runtime receives it. */
export interface FunctionCode {
  /** The function version's id: isolates are cached per version, never shared between two. */
  versionId: string;
  /** An ES module exporting `transform` (or a default export). */
  code: string;
}

/** What `ctx` holds inside the function: where the event is going, never a credential. */
export interface FunctionContext {
  /** `destination`: bound to one destination connection (the warehouse included); `source`: to a write key. */
  kind: 'destination' | 'source';
  /** The destination's app type (`warehouse`, `amplitude`, ...), absent for a source function. */
  destination?: string;
  /** The integration id, absent for the warehouse and for a source function. */
  integrationId?: string;
  writeKeyId: string;
}

/** Limits on one invocation (a batch). An isolate that breaches CPU or memory is discarded. */
export interface FunctionLimits {
  /** CPU time per event; a batch gets `min(maxBatchCpuMs, cpuMsPerEvent × events)`. */
  cpuMsPerEvent: number;
  maxBatchCpuMs: number;
  /** The isolate's heap. */
  memoryMb: number;
  /** Events one input may become. */
  maxOutputEvents: number;
  /** One output event's JSON size. */
  maxOutputBytesPerEvent: number;
  /** A whole batch's output, in JSON bytes. */
  maxOutputBytesPerBatch: number;
  /** `console.log` lines and bytes kept per batch; the rest is counted as dropped. */
  maxLogLines: number;
  maxLogBytes: number;
}

export const defaultFunctionLimits: FunctionLimits = {
  cpuMsPerEvent: 5,
  maxBatchCpuMs: 1_000,
  memoryMb: 64,
  maxOutputEvents: 10,
  maxOutputBytesPerEvent: 32 * 1024,
  maxOutputBytesPerBatch: 2 * 1024 * 1024,
  maxLogLines: 50,
  maxLogBytes: 8 * 1024,
};

/** The CPU budget of a batch of `events` events under `limits`, in milliseconds. */
export const batchCpuBudgetMs = (limits: FunctionLimits, events: number): number =>
  Math.min(limits.maxBatchCpuMs, limits.cpuMsPerEvent * Math.max(1, events));

/** Codes of a failed event: the event is dead-lettered with the function version (permanent). */
export type EventFailureCode = 'function_error' | 'function_output_invalid';

/**
 * Codes of a failed batch: nothing of it is used; the batch is retried, then dead-lettered.
 * `function_crashed`: the sandbox process died or stopped answering.
 */
export type BatchFailureCode = 'function_timeout' | 'function_memory' | 'function_crashed';

/** What the function made of one input event, before the host's checks (function-output.ts). */
export type EventResult =
  | { result: 'ok'; events: unknown[] }
  | { result: 'dropped' }
  | { result: 'error'; code: EventFailureCode; message: string };

export interface FunctionLog {
  /** Index of the input event being transformed when the line was logged. */
  event: number;
  level: 'log' | 'info' | 'warn' | 'error';
  message: string;
}

interface RunTelemetry {
  logs: FunctionLog[];
  /** Log lines beyond the caps, counted and not kept. */
  logsDropped: number;
  /** CPU time the isolate spent on this batch. */
  cpuMicros: number;
}

export type BatchRun =
  | ({ outcome: 'completed'; results: EventResult[] } & RunTelemetry)
  | ({ outcome: 'failed'; code: BatchFailureCode; message: string } & RunTelemetry);

/**
 * A runtime executes functions. `run` never throws for anything the function did: a function's
 * fault is a result; it rejects only if the runtime itself is closed.
 */
export interface FunctionRuntime {
  readonly name: 'isolated-vm' | 'quickjs';
  run(
    fn: FunctionCode,
    events: readonly object[],
    ctx: FunctionContext,
    limits?: FunctionLimits,
  ): Promise<BatchRun>;
  close(): Promise<void>;
}
