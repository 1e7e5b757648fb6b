/**
 * The entry of the child process that runs tenant code and nothing else (isolated-vm-runtime.ts
 * forks it with an empty environment): isolated-vm's README asks to keep isolates out of any
 * process that holds something worth stealing, and a crash here costs one child, not the caller.
 *
 * Protocol (structured clones over the IPC channel, `serialization: 'advanced'`):
 * in `SandboxRequest`, out `SandboxAnswer`.
 */
import ivm from 'isolated-vm';
import {
  batchCpuBudgetMs,
  defaultFunctionLimits,
  type BatchRun,
  type EventResult,
  type FunctionCode,
  type FunctionContext,
  type FunctionLimits,
  type FunctionLog,
} from '../function-contract';
import { guestBootstrap } from './guest-bootstrap';

export interface SandboxRequest {
  id: number;
  fn: FunctionCode;
  events: readonly object[];
  ctx: FunctionContext;
  limits: FunctionLimits;
}

export interface SandboxAnswer {
  id: number;
  run: BatchRun;
}

/** Isolates kept warm per child (argv[2], default 64); the least recently used beyond it is disposed. */
const maxIsolates = Math.max(1, Number(process.argv[2]) || 64);
/** Error messages and output-invalid reasons kept per event. */
const maxMessageBytes = 1024;

interface GuestRun {
  results: EventResult[];
  logs: FunctionLog[];
  logsDropped: number;
}

/** One function version's isolate, or why its code cannot run (kept so it is not compiled again). */
type Version =
  | {
      kind: 'ready';
      isolate: ivm.Isolate;
      context: ivm.Context;
      run: ivm.Reference<(events: unknown, ctx: unknown, caps: unknown) => GuestRun>;
      takeLogs: ivm.Reference<() => Pick<GuestRun, 'logs' | 'logsDropped'>>;
    }
  | { kind: 'broken'; message: string };

/** A failure of the whole batch, thrown inside this file and turned into a `failed` BatchRun. */
class BatchFailure extends Error {
  constructor(
    readonly code: 'function_timeout' | 'function_memory' | 'function_crashed',
    message: string,
  ) {
    super(message);
  }
}

const versions = new Map<string, Version>();
/** Batches of one version run one after the other: a timeout disposes the isolate under the next. */
const queues = new Map<string, Promise<unknown>>();

function forget(versionId: string): void {
  const version = versions.get(versionId);
  versions.delete(versionId);
  if (version?.kind === 'ready' && !version.isolate.isDisposed) version.isolate.dispose();
}

function remember(versionId: string, version: Version): void {
  versions.set(versionId, version);
  // A version with a batch queued or running keeps its isolate: disposing it under the batch
  // would read as that function's memory failure. Over the cap until they finish, if need be.
  for (const oldest of versions.keys()) {
    if (versions.size <= maxIsolates) break;
    if (oldest !== versionId && !queues.has(oldest)) forget(oldest);
  }
}

const describe = (error: unknown): string =>
  (error instanceof Error ? `${error.name}: ${error.message}` : String(error)).slice(0, maxMessageBytes);

/**
 * What a rejected isolated-vm call means for the batch, if it is the batch's fault at all. Error
 * text alone is not trusted, a function can throw any message: the memory limit is the isolate
 * disposed under us, a timeout is isolated-vm's message after at least the budget.
 */
function batchFailureOf(
  error: unknown,
  isolate: ivm.Isolate,
  budgetMs: number,
  startedNs: bigint,
): BatchFailure | undefined {
  if (isolate.isDisposed)
    return new BatchFailure('function_memory', 'the function exceeded its memory limit');
  const message = error instanceof Error ? error.message : String(error);
  const elapsedMs = Number(process.hrtime.bigint() - startedNs) / 1e6;
  if (/^Script execution timed out\.?$/.test(message) && elapsedMs >= budgetMs - 1)
    return new BatchFailure('function_timeout', `the batch exceeded its CPU budget of ${budgetMs} ms`);
  return undefined;
}

/** The version's isolate: created, compiled and evaluated on first use, then reused. */
async function versionOf(fn: FunctionCode, limits: FunctionLimits): Promise<Version> {
  const setupBudgetMs = limits.maxBatchCpuMs;
  const known = versions.get(fn.versionId);
  if (known) {
    versions.delete(fn.versionId);
    versions.set(fn.versionId, known);
    return known;
  }
  const isolate = new ivm.Isolate({ memoryLimit: limits.memoryMb });
  const started = process.hrtime.bigint();
  try {
    const context = await isolate.createContext();
    const bootstrap = await isolate.compileScript(guestBootstrap);
    const factory = (await bootstrap.run(context, { reference: true })) as ivm.Reference<
      (namespace: unknown) => unknown
    >;
    let module: ivm.Module;
    try {
      module = await isolate.compileModule(fn.code, { filename: `function:${fn.versionId}` });
      await module.instantiate(context, (specifier) => {
        throw new Error(`import of "${specifier}" is not allowed: functions cannot import modules`);
      });
    } catch (error) {
      // A module too big for the heap is the memory limit, not broken code to remember.
      if (isolate.isDisposed)
        throw new BatchFailure('function_memory', 'the function exceeded its memory limit');
      isolate.dispose();
      const broken: Version = { kind: 'broken', message: describe(error) };
      remember(fn.versionId, broken);
      return broken;
    }
    const evaluating = process.hrtime.bigint();
    try {
      // The top level runs once per version, not per batch: charged to a one-event batch's few
      // milliseconds it would time out on a busy machine, so it gets the whole batch cap.
      await module.evaluate({ timeout: setupBudgetMs });
    } catch (error) {
      const failure = batchFailureOf(error, isolate, setupBudgetMs, evaluating);
      if (!isolate.isDisposed) isolate.dispose();
      if (failure) throw failure;
      const broken: Version = { kind: 'broken', message: describe(error) };
      remember(fn.versionId, broken);
      return broken;
    }
    const runner = (await factory.apply(undefined, [module.namespace.derefInto()], {
      result: { reference: true },
      timeout: setupBudgetMs,
    })) as ivm.Reference<Record<string, unknown>>;
    const run = (await runner.get('run', { reference: true })) as Extract<Version, { kind: 'ready' }>['run'];
    const takeLogs = (await runner.get('takeLogs', { reference: true })) as Extract<
      Version,
      { kind: 'ready' }
    >['takeLogs'];
    const ready: Version = { kind: 'ready', isolate, context, run, takeLogs };
    remember(fn.versionId, ready);
    return ready;
  } catch (error) {
    const failure =
      error instanceof BatchFailure ? error : batchFailureOf(error, isolate, setupBudgetMs, started);
    if (!isolate.isDisposed) isolate.dispose();
    throw failure ?? new BatchFailure('function_crashed', `the sandbox could not start: ${describe(error)}`);
  }
}

/** JSON size; a value JSON cannot write (a cycle, a BigInt) is over any limit. */
const bytesOf = (value: unknown): number => {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
  } catch {
    return Infinity;
  }
};

/**
 * The host's own output checks: the guest's are advisory (it could have replaced its intrinsics),
 * these are exact. A result that is not one the contract knows is the function's fault.
 */
function checkedResults(raw: unknown, count: number, limits: FunctionLimits): EventResult[] {
  const invalid = (message: string): EventResult => ({
    result: 'error',
    code: 'function_output_invalid',
    message,
  });
  const list = Array.isArray(raw) ? raw : [];
  const results: EventResult[] = [];
  let batchBytes = 0;
  for (let i = 0; i < count; i += 1) {
    const result = list[i] as EventResult | undefined;
    if (result?.result === 'dropped') {
      results.push({ result: 'dropped' });
    } else if (result?.result === 'error' && typeof result.message === 'string') {
      const code = result.code === 'function_output_invalid' ? result.code : 'function_error';
      results.push({ result: 'error', code, message: result.message.slice(0, maxMessageBytes + 1) });
    } else if (result?.result === 'ok' && Array.isArray(result.events)) {
      const outputs: unknown[] = result.events;
      if (outputs.length > limits.maxOutputEvents) {
        results.push(
          invalid(`returned ${outputs.length} events; at most ${limits.maxOutputEvents} are allowed`),
        );
        continue;
      }
      if (outputs.some((event) => event === null || typeof event !== 'object' || Array.isArray(event))) {
        results.push(invalid('an output is not an object'));
        continue;
      }
      if (batchBytes > limits.maxOutputBytesPerBatch) {
        results.push(invalid(`the batch's output passed ${limits.maxOutputBytesPerBatch} bytes`));
        continue;
      }
      let eventBytes = 0;
      let over: string | undefined;
      for (const [k, event] of result.events.entries()) {
        const bytes = bytesOf(event);
        eventBytes += bytes;
        if (bytes > limits.maxOutputBytesPerEvent) {
          over = `output ${k} is ${bytes} bytes; at most ${limits.maxOutputBytesPerEvent} are allowed`;
          break;
        }
      }
      if (over) {
        results.push(invalid(over));
        continue;
      }
      batchBytes += eventBytes;
      if (batchBytes > limits.maxOutputBytesPerBatch) {
        results.push(invalid(`the batch's output passed ${limits.maxOutputBytesPerBatch} bytes`));
        continue;
      }
      results.push({ result: 'ok', events: result.events });
    } else {
      results.push(invalid('the sandbox returned no result for this event'));
    }
  }
  return results;
}

const cpuNs = (isolate: ivm.Isolate): bigint | undefined => {
  try {
    return isolate.isDisposed ? undefined : isolate.cpuTime;
  } catch {
    return undefined;
  }
};

async function runBatch(request: SandboxRequest): Promise<BatchRun> {
  const { fn, events, ctx, limits } = request;
  const budgetMs = batchCpuBudgetMs(limits, events.length);
  const started = process.hrtime.bigint();
  const wallMicros = (): number => Number((process.hrtime.bigint() - started) / 1000n);
  let version: Version;
  try {
    version = await versionOf(fn, limits);
  } catch (error) {
    const failure =
      error instanceof BatchFailure ? error : new BatchFailure('function_crashed', describe(error));
    return {
      outcome: 'failed',
      code: failure.code,
      message: failure.message,
      logs: [],
      logsDropped: 0,
      cpuMicros: wallMicros(),
    };
  }
  if (version.kind === 'broken') {
    const message = version.message;
    return {
      outcome: 'completed',
      results: events.map(() => ({ result: 'error', code: 'function_error', message })),
      logs: [],
      logsDropped: 0,
      cpuMicros: 0,
    };
  }
  const { isolate } = version;
  const cpuBefore = cpuNs(isolate);
  const cpuMicros = (): number => {
    const after = cpuNs(isolate);
    return cpuBefore !== undefined && after !== undefined
      ? Number((after - cpuBefore) / 1000n)
      : wallMicros();
  };
  const caps = {
    maxOutputEvents: limits.maxOutputEvents,
    maxOutputBytesPerEvent: limits.maxOutputBytesPerEvent,
    maxLogLines: limits.maxLogLines,
    maxLogBytes: limits.maxLogBytes,
    maxMessageBytes,
  };
  const running = process.hrtime.bigint();
  try {
    const guest = (await version.run.apply(
      undefined,
      [
        new ivm.ExternalCopy(events).copyInto({ release: true }),
        new ivm.ExternalCopy(ctx).copyInto({ release: true }),
        new ivm.ExternalCopy(caps).copyInto({ release: true }),
      ],
      { timeout: budgetMs, result: { copy: true } },
    )) as GuestRun;
    return {
      outcome: 'completed',
      results: checkedResults(guest.results, events.length, limits),
      logs: Array.isArray(guest.logs) ? guest.logs.slice(0, limits.maxLogLines) : [],
      logsDropped: typeof guest.logsDropped === 'number' ? guest.logsDropped : 0,
      cpuMicros: cpuMicros(),
    };
  } catch (error) {
    const failure = batchFailureOf(error, isolate, budgetMs, running);
    let logs: Pick<GuestRun, 'logs' | 'logsDropped'> = { logs: [], logsDropped: 0 };
    if (failure?.code === 'function_timeout') {
      // The tenant's lines up to the timeout are what explains it; a short call, the loop is stopped.
      try {
        logs = (await version.takeLogs.apply(undefined, [], {
          timeout: 50,
          result: { copy: true },
        })) as typeof logs;
      } catch {
        // The logs are a courtesy; the failure is reported either way.
      }
    }
    const used = cpuMicros();
    forget(fn.versionId);
    const { code, message } = failure ?? new BatchFailure('function_crashed', describe(error));
    return {
      outcome: 'failed',
      code,
      message,
      logs: logs.logs,
      logsDropped: logs.logsDropped,
      cpuMicros: used,
    };
  }
}

/**
 * The first isolate of a process costs tens of milliseconds more than the next ones (measured:
 * 41 ms against 1-9 ms on this machine), enough to time out a tenant's first small batch. A
 * throwaway version pays it before the first request is served.
 */
const warmedUp: Promise<unknown> = runBatch({
  id: 0,
  fn: { versionId: '\0warm-up', code: 'export default (event) => event;' },
  events: [{ type: 'track' }],
  ctx: { kind: 'source', writeKeyId: 'warm-up' },
  limits: { ...defaultFunctionLimits, cpuMsPerEvent: 10_000, maxBatchCpuMs: 10_000 },
}).finally(() => forget('\0warm-up'));

function serve(request: SandboxRequest): void {
  const versionId = request.fn.versionId;
  const previous = queues.get(versionId) ?? warmedUp;
  const next = previous
    .then(() => runBatch(request))
    .catch((error: unknown): BatchRun => ({
      outcome: 'failed',
      code: 'function_crashed',
      message: describe(error),
      logs: [],
      logsDropped: 0,
      cpuMicros: 0,
    }));
  queues.set(versionId, next);
  void next.then((run) => {
    if (queues.get(versionId) === next) queues.delete(versionId);
    process.send?.({ id: request.id, run } satisfies SandboxAnswer);
  });
}

process.on('message', (message: SandboxRequest) => serve(message));
// The parent's death must not leave an orphan running tenant code.
process.on('disconnect', () => process.exit(0));
