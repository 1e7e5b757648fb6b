import type { TrackingEvent } from '@pipeline/events';
import {
  checkFunctionResult,
  defaultFunctionLimits,
  type BatchRun,
  type CheckedResult,
  type FunctionContext,
  type FunctionLimits,
  type FunctionRuntime,
} from '@pipeline/functions';
import type { Logger } from '@pipeline/logger';
import type { BoundFunction } from '@pipeline/tenancy';
import { LRUCache } from 'lru-cache';

/** When a function that keeps failing is disabled, and for how long its records wait. */
export interface FunctionBreakerOptions {
  /** Batches in a row that time out, run out of memory or crash the sandbox: then disabled. */
  failures: number;
  /** How long a disabled function's records are held before one batch probes it again. */
  cooldownMs: number;
}

// Two, not five: each failed batch holds its whole consumer batch for the function's CPU budget;
// bench:function-neighbours measured another tenant at 0.83 of its rate with five and 0.94 with two.
export const defaultFunctionBreaker: FunctionBreakerOptions = { failures: 2, cooldownMs: 30_000 };

/** What a delivery consumer does with one function's answer for a batch. */
export type StepResult =
  /** One checked result per input event, in order. */
  | { kind: 'applied'; results: CheckedResult[]; run: BatchRun }
  /**
   * Nothing of the batch is usable: retried (`hold` false, counted as an attempt, dead-lettered
   * when they run out) or, while the function is disabled, held without counting (`hold` true):
   * its events are never delivered untransformed.
   */
  | { kind: 'failed'; reason: string; retryAfterMs: number; hold: boolean; run?: BatchRun };

/** Counts of a consumer's function runs, for metrics (pipeline_function_*). */
export interface FunctionStepCounters {
  /** Events by what became of them: ok, dropped, function_error, function_output_invalid, and batch failures. */
  events: Map<string, number>;
  /** CPU the sandbox spent, in microseconds. */
  cpuMicros: number;
  /** Functions disabled now. */
  disabled(): number;
}

interface Breaker {
  /** Batches in a row that failed. */
  failures: number;
  /** Until when the function is disabled; 0 when it is not. */
  openUntil: number;
}

/**
 * Runs `bound` through `step`; without a step (a consumer that runs no functions) the events
 * are held, never delivered untransformed.
 */
export function applyBound(
  step: FunctionStep | undefined,
  bound: BoundFunction,
  events: readonly TrackingEvent[],
  ctx: FunctionContext,
): Promise<StepResult> {
  if (step) return step.apply(bound, events, ctx);
  return Promise.resolve({
    kind: 'failed',
    reason: `function_unavailable: ${functionLabel(bound)} is bound but this consumer runs no functions; its events are held`,
    retryAfterMs: 30_000,
    hold: true,
  });
}

/** The tenant-facing name of a bound function version, in every reason. */
export const functionLabel = (bound: BoundFunction): string =>
  `function ${bound.functionId} version ${bound.version}`;

/**
 * Runs a destination's bound function on the events bound for it, and decides, per function
 * version, whether it may run at all (the breaker). Shared by the forwarding and warehouse
 * destinations, so a function behaves the same whatever it is bound to (docs/functions.md).
 */
export class FunctionStep {
  private readonly breakers = new LRUCache<string, Breaker>({ max: 10_000 });
  private readonly limits: FunctionLimits;
  private readonly breaker: FunctionBreakerOptions;
  readonly counters: FunctionStepCounters;

  constructor(
    private readonly runtime: FunctionRuntime,
    private readonly logger: Logger,
    options: { limits?: Partial<FunctionLimits>; breaker?: Partial<FunctionBreakerOptions> } = {},
    private readonly now: () => number = Date.now,
  ) {
    this.limits = { ...defaultFunctionLimits, ...options.limits };
    this.breaker = { ...defaultFunctionBreaker, ...options.breaker };
    const breakers = this.breakers;
    const now_ = now;
    this.counters = {
      events: new Map(),
      cpuMicros: 0,
      disabled() {
        let open = 0;
        const at = now_();
        for (const breaker of breakers.values()) if (breaker.openUntil > at) open += 1;
        return open;
      },
    };
  }

  /** Whether a version is disabled now (its records are held), for metrics and tests. */
  isDisabled(versionId: string): boolean {
    return (this.breakers.get(versionId)?.openUntil ?? 0) > this.now();
  }

  async apply(
    bound: BoundFunction,
    events: readonly TrackingEvent[],
    ctx: FunctionContext,
  ): Promise<StepResult> {
    const breaker = this.breakers.get(bound.versionId) ?? { failures: 0, openUntil: 0 };
    const at = this.now();
    if (breaker.openUntil > at)
      return {
        kind: 'failed',
        reason: `function_disabled: ${functionLabel(bound)} failed ${breaker.failures} batches in a row; its events are held until a probe succeeds`,
        retryAfterMs: breaker.openUntil - at,
        hold: true,
      };
    const run = await this.runtime.run(
      { versionId: bound.versionId, code: bound.code },
      events,
      ctx,
      this.limits,
    );
    this.counters.cpuMicros += run.cpuMicros;
    if (run.outcome === 'failed') {
      breaker.failures += 1;
      this.count(run.code, events.length);
      if (breaker.failures >= this.breaker.failures) {
        // Open (again, after a failed probe): the next batch waits the whole cooldown.
        breaker.openUntil = at + this.breaker.cooldownMs;
        this.logger.warn('function disabled: its events are held', {
          functionId: bound.functionId,
          version: bound.version,
          failures: breaker.failures,
          code: run.code,
          cooldownMs: this.breaker.cooldownMs,
        });
      }
      this.breakers.set(bound.versionId, breaker);
      return {
        kind: 'failed',
        reason: `${run.code}: ${functionLabel(bound)}: ${run.message}`,
        retryAfterMs: 0,
        hold: false,
        run,
      };
    }
    if (breaker.openUntil > 0)
      this.logger.info('function enabled again: a probe batch ran', {
        functionId: bound.functionId,
        version: bound.version,
      });
    this.breakers.delete(bound.versionId);
    const results = events.map((event, index) => {
      const result = run.results[index];
      const checked: CheckedResult = result
        ? checkFunctionResult(event, result)
        : { result: 'error', code: 'function_error', message: 'the sandbox gave no result for this event' };
      this.count(checked.result === 'error' ? checked.code : checked.result, 1);
      if (checked.result === 'error')
        return { ...checked, message: `${checked.code}: ${functionLabel(bound)}: ${checked.message}` };
      return checked;
    });
    return { kind: 'applied', results, run };
  }

  private count(what: string, events: number): void {
    this.counters.events.set(what, (this.counters.events.get(what) ?? 0) + events);
  }
}
