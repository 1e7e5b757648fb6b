import { createRequire } from 'node:module';
import { AppError } from '@pipeline/errors';
import { parseJsonText } from '@pipeline/events';
import {
  newQuickJSWASMModuleFromVariant,
  RELEASE_SYNC,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from 'quickjs-emscripten';
import {
  batchCpuBudgetMs,
  defaultFunctionLimits,
  type BatchFailureCode,
  type BatchRun,
  type EventResult,
  type FunctionCode,
  type FunctionContext,
  type FunctionLimits,
  type FunctionLog,
  type FunctionRuntime,
} from '../function-contract';
import { guestHarness } from './guest-harness';

export interface QuickJsRuntimeOptions {
  /** Function versions whose context stays warm; the least recently used is disposed past it. */
  maxContexts?: number;
  /**
   * How events enter the guest. `json`: one JSON text per batch, parsed by QuickJS's own
   * JSON.parse (the V8 escaped-key bug is in V8's parser, not in QuickJS's, and QuickJS defines
   * every parsed key as an own property, `__proto__` included; the generative test holds it).
   * `handles`: every value built with the handle API. `json` is the default: it costs about the
   * same (tools/bench/functions.js; QuickJS's JSON.parse is about 23 µs for a 750-byte event, the
   * handle API's crossings as much) and is lossless, where a string with a lone surrogate handed
   * through the handle API goes through UTF-8 and loses it.
   */
  input?: 'json' | 'handles';
  /** QuickJS's own stack cap (recursion depth), in bytes. */
  maxStackBytes?: number;
}

/** One function version's QuickJS runtime and context, never shared with another version. */
interface Sandbox {
  runtime: QuickJSRuntime;
  vm: QuickJSContext;
  runner: QuickJSHandle;
  transform: QuickJSHandle;
  /** Set per batch: where a console line goes, and the deadline the interrupt checks. */
  holder: { batch: BatchState };
}

interface BatchState {
  logs: FunctionLog[];
  logBytes: number;
  logsDropped: number;
  limits: FunctionLimits;
  budgetMicros: number;
  /** The Wasm module's linear memory when the batch started, in bytes (see linearBytes). */
  linearAtStart: number;
  /** Set when the interrupt handler saw linear memory grow past the limit. */
  overMemory: boolean;
  /**
   * performance.now() in µs past which the interrupt handler stops the guest; set when the
   * tenant's code first runs in the batch (startClock): a new context's own setup is not billed.
   * Wall time, as isolated-vm's `timeout`: the guest runs on the consumer's thread, and the time
   * it holds that thread is what a budget protects; on a busy machine it only stops earlier.
   */
  deadlineMicros: number;
  interrupted: boolean;
}

/** A module that does not compile or whose top level throws: every event of the batch fails. */
interface Broken {
  message: string;
}

type Failure = { code: BatchFailureCode; message: string };

/**
 * QuickJS counts its stack in the Emscripten stack, but its C frames also take V8's native
 * stack (about 1 MB on Node's main thread), about twice as much: 512 KB overflowed V8's stack
 * first (a host RangeError that kills the Wasm module), 384 KB did not; 256 KB (about 1,300
 * levels of JavaScript recursion) leaves room for a deep host call stack.
 */
const defaultMaxStackBytes = 256 * 1024;

/**
 * The release build, loaded with require: the package loads its Emscripten module with a
 * dynamic import(), which jest's module VM refuses (and the same file is there for require).
 */
const loadCommonJs = createRequire(__filename);
const releaseSync: QuickJSSyncVariant = {
  ...RELEASE_SYNC,
  importModuleLoader: async () =>
    loadCommonJs(
      loadCommonJs.resolve('@jitl/quickjs-wasmfile-release-sync/emscripten-module', {
        paths: [loadCommonJs.resolve('quickjs-emscripten')],
      }),
    ) as Awaited<ReturnType<QuickJSSyncVariant['importModuleLoader']>>,
};

/**
 * The process's CPU time in microseconds, for `cpuMicros`. Not process.threadCpuUsage: on Linux
 * it moves in steps of up to 5 ms (scheduler ticks); cpuUsage is exact to the µs (it also counts
 * the host's other threads during the batch).
 */
const cpuMicrosNow = (): number => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

/**
 * Runs tenant functions in QuickJS compiled to WebAssembly, in this process: the guest sees only
 * the Wasm module's linear memory and the globals the harness gives it (console), never the
 * host's objects. The fallback runtime of docs/decisions/0002-function-sandbox.md.
 */
export class QuickJsRuntime implements FunctionRuntime {
  readonly name = 'quickjs' as const;
  private module: Promise<QuickJSWASMModule> | undefined;
  /** Insertion order is recency: a hit is deleted and set again. */
  private readonly sandboxes = new Map<string, Sandbox>();
  private closed = false;
  private readonly maxContexts: number;
  private readonly input: 'json' | 'handles';
  private readonly maxStackBytes: number;

  constructor(options: QuickJsRuntimeOptions = {}) {
    this.maxContexts = options.maxContexts ?? 64;
    this.input = options.input ?? 'json';
    this.maxStackBytes = options.maxStackBytes ?? defaultMaxStackBytes;
  }

  async run(
    fn: FunctionCode,
    events: readonly object[],
    ctx: FunctionContext,
    limits: FunctionLimits = defaultFunctionLimits,
  ): Promise<BatchRun> {
    if (this.closed) throw closedError();
    // One Wasm module per runtime object: tests and benchmarks do not share linear memory.
    this.module ??= newQuickJSWASMModuleFromVariant(releaseSync).then((module) => {
      warmUp(module);
      return module;
    });
    const module = await this.module;
    if (this.closed) throw closedError();

    const started = cpuMicrosNow();
    const batch: BatchState = {
      logs: [],
      logBytes: 0,
      logsDropped: 0,
      limits,
      budgetMicros: batchCpuBudgetMs(limits, events.length) * 1000,
      deadlineMicros: Infinity,
      interrupted: false,
      linearAtStart: linearBytes(module),
      overMemory: false,
    };
    const telemetry = () => ({
      logs: batch.logs,
      logsDropped: batch.logsDropped,
      cpuMicros: cpuMicrosNow() - started,
    });

    try {
      const sandbox = this.sandboxFor(module, fn, batch);
      if ('failure' in sandbox) return { outcome: 'failed', ...sandbox.failure, ...telemetry() };
      if ('message' in sandbox) {
        const result: EventResult = { result: 'error', code: 'function_error', message: sandbox.message };
        return { outcome: 'completed', results: events.map(() => result), ...telemetry() };
      }

      const outcome = this.runBatch(sandbox, events, ctx, limits);
      const grown = linearBytes(module) - batch.linearAtStart;
      if (batch.overMemory || grown > limits.memoryMb * MB) {
        // QuickJS's own limit does not hold under Emscripten (below): the batch that made the
        // linear memory grow past the function's limit fails, and since linear memory never
        // shrinks, the whole module is replaced to give it back.
        this.dropModule();
        return {
          outcome: 'failed',
          code: 'function_memory',
          message: `the function ran out of its ${limits.memoryMb} MB of memory`,
          ...telemetry(),
        };
      }
      if ('failure' in outcome) {
        this.discard(fn.versionId);
        return { outcome: 'failed', ...outcome.failure, ...telemetry() };
      }
      return { outcome: 'completed', results: outcome.results, ...telemetry() };
    } catch (error) {
      // Thrown out of the Wasm module itself (V8's own stack overflow inside it, an abort):
      // its memory may hold half-done QuickJS state, so the whole module is dropped, every
      // version's context with it, and the next batch starts a new one.
      this.module = undefined;
      this.sandboxes.clear();
      return {
        outcome: 'failed',
        code: 'function_crashed',
        message: `the QuickJS module failed: ${error instanceof Error ? error.message : String(error)}`,
        ...telemetry(),
      };
    }
  }

  /** Disposes every context and forgets the module, whose linear memory the GC then frees. */
  private dropModule(): void {
    for (const versionId of [...this.sandboxes.keys()]) this.discard(versionId);
    this.module = undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const versionId of [...this.sandboxes.keys()]) this.discard(versionId);
    this.module = undefined;
  }

  /** The warm sandbox of this version, or a new one with the module evaluated in it. */
  private sandboxFor(
    module: QuickJSWASMModule,
    fn: FunctionCode,
    batch: BatchState,
  ): Sandbox | Broken | { failure: Failure } {
    const warm = this.sandboxes.get(fn.versionId);
    if (warm !== undefined) {
      this.sandboxes.delete(fn.versionId);
      this.sandboxes.set(fn.versionId, warm);
      warm.holder.batch = batch;
      return warm;
    }

    const runtime = module.newRuntime();
    runtime.setMemoryLimit(batch.limits.memoryMb * 1024 * 1024);
    runtime.setMaxStackSize(this.maxStackBytes);
    runtime.setModuleLoader((name) => ({
      error: new Error(`imports are not allowed (import of ${JSON.stringify(name)})`),
    }));
    const vm = runtime.newContext();
    // Filled below; the interrupt handler and the log function read the sandbox's current batch.
    const holder: { batch: BatchState } = { batch };
    runtime.setInterruptHandler(() => {
      const current = holder.batch;
      if (current.interrupted || current.overMemory) return true;
      if (linearBytes(module) - current.linearAtStart > current.limits.memoryMb * MB) {
        current.overMemory = true;
        return true;
      }
      if (performance.now() * 1000 < current.deadlineMicros) return false;
      current.interrupted = true;
      return true;
    });

    const cleanup = (handles: QuickJSHandle[]) => {
      for (const handle of handles) if (handle.alive) handle.dispose();
      vm.dispose();
      runtime.dispose();
    };

    const hostLog = vm.newFunction('hostLog', (level, event, message) =>
      this.log(holder.batch, vm, level, event, message) ? vm.true : vm.false,
    );
    const harnessFailed = (error: QuickJSHandle): { failure: Failure } => {
      const failure = this.batchFailure(holder.batch, vm, error) ?? {
        code: 'function_crashed' as const,
        message: `the QuickJS harness did not start: ${describeError(vm, error)}`,
      };
      error.dispose();
      return { failure };
    };
    const harness = vm.evalCode(guestHarness, 'harness.js', { type: 'global', strict: true });
    if (harness.error !== undefined) {
      const failed = harnessFailed(harness.error);
      cleanup([hostLog]);
      return failed;
    }
    const made = vm.callFunction(harness.value, vm.undefined, hostLog);
    harness.value.dispose();
    hostLog.dispose();
    if (made.error !== undefined) {
      const failed = harnessFailed(made.error);
      cleanup([]);
      return failed;
    }
    const runner = made.value;

    startClock(holder.batch);
    const evaluated = vm.evalCode(fn.code, `function-${fn.versionId}.js`, { type: 'module' });
    if (evaluated.error !== undefined) {
      const failure = this.batchFailure(holder.batch, vm, evaluated.error);
      const message = describeError(vm, evaluated.error);
      evaluated.error.dispose();
      cleanup([runner]);
      return failure === undefined ? { message } : { failure };
    }
    const namespace = evaluated.value;
    let transform = vm.getProp(namespace, 'transform');
    if (vm.typeof(transform) !== 'function') {
      transform.dispose();
      transform = vm.getProp(namespace, 'default');
    }
    namespace.dispose();

    const sandbox: Sandbox = { runtime, vm, runner, transform, holder };
    this.sandboxes.set(fn.versionId, sandbox);
    while (this.sandboxes.size > this.maxContexts) {
      const oldest = this.sandboxes.keys().next().value;
      if (oldest === undefined) break;
      this.discard(oldest);
    }
    return sandbox;
  }

  private runBatch(
    sandbox: Sandbox,
    events: readonly object[],
    ctx: FunctionContext,
    limits: FunctionLimits,
  ): { results: EventResult[] } | { failure: Failure } {
    const { vm } = sandbox;
    const input = this.input === 'json' ? vm.newString(JSON.stringify(events)) : toGuest(vm, events);
    const ctxJson = vm.newString(JSON.stringify(ctx));
    const maxOutputs = vm.newNumber(limits.maxOutputEvents);
    const maxChars = vm.newNumber(limits.maxOutputBytesPerEvent);
    startClock(sandbox.holder.batch);
    const called = vm.callFunction(
      sandbox.runner,
      vm.undefined,
      sandbox.transform,
      input,
      ctxJson,
      maxOutputs,
      maxChars,
    );
    input.dispose();
    ctxJson.dispose();
    maxOutputs.dispose();
    maxChars.dispose();
    if (called.error !== undefined) {
      const failure = this.batchFailure(sandbox.holder.batch, vm, called.error) ?? {
        code: 'function_crashed' as const,
        message: `the QuickJS harness failed: ${describeError(vm, called.error)}`,
      };
      called.error.dispose();
      return { failure };
    }
    const text = vm.typeof(called.value) === 'string' ? vm.getString(called.value) : undefined;
    called.value.dispose();
    // The framing is written by code inside the sandbox: a tenant who broke it gets its own
    // batch marked invalid, never another reading of it.
    const results =
      text === undefined ? undefined : readResults(text, events.length, sandbox.holder.batch, limits);
    if (results === undefined) {
      const invalid: EventResult = {
        result: 'error',
        code: 'function_output_invalid',
        message: 'the sandbox returned unreadable results',
      };
      return { results: events.map(() => invalid) };
    }
    return { results };
  }

  /** A timeout or out of memory, which fail the batch; undefined for the function's own error. */
  private batchFailure(batch: BatchState, vm: QuickJSContext, error: QuickJSHandle): Failure | undefined {
    if (batch.interrupted)
      return {
        code: 'function_timeout',
        message: `the function ran past the batch's budget of ${batch.budgetMicros / 1000} ms`,
      };
    if (batch.overMemory)
      return {
        code: 'function_memory',
        message: `the function ran out of its ${batch.limits.memoryMb} MB of memory`,
      };
    // Timeouts and linear memory growth are the host's own observations; QuickJS's out of memory
    // is known only by its error, which a function can imitate (`new e.constructor('out of
    // memory')` from a caught InternalError). Accepted: it fails only that function's batch, as a
    // `while (true)` would, and a real one leaves nothing after the fact to tell them apart.
    const described = describeError(vm, error);
    if (described === 'InternalError: out of memory' || described === 'out of memory')
      return {
        code: 'function_memory',
        message: `the function ran out of its ${batch.limits.memoryMb} MB of memory`,
      };
    return undefined;
  }

  /** Keeps a console line within the batch's caps; false once nothing more will be kept. */
  private log(
    batch: BatchState,
    vm: QuickJSContext,
    levelHandle: QuickJSHandle,
    eventHandle: QuickJSHandle,
    messageHandle: QuickJSHandle,
  ): boolean {
    const level = vm.getString(levelHandle) as FunctionLog['level'];
    const event = vm.getNumber(eventHandle);
    if (batch.logs.length >= batch.limits.maxLogLines) {
      batch.logsDropped += 1;
      return false;
    }
    const message = vm.getString(messageHandle);
    const bytes = Buffer.byteLength(message);
    if (batch.logBytes + bytes > batch.limits.maxLogBytes) {
      // A shorter line may still fit: the guest keeps sending until the line cap.
      batch.logsDropped += 1;
      return true;
    }
    batch.logBytes += bytes;
    batch.logs.push({ event, level, message });
    return batch.logs.length < batch.limits.maxLogLines;
  }

  private discard(versionId: string): void {
    const sandbox = this.sandboxes.get(versionId);
    if (sandbox === undefined) return;
    this.sandboxes.delete(versionId);
    sandbox.runner.dispose();
    sandbox.transform.dispose();
    sandbox.vm.dispose();
    sandbox.runtime.dispose();
  }
}

const MB = 1024 * 1024;

const closedError = () => new AppError(503, 'functions_runtime_closed', 'the QuickJS runtime is closed');

/**
 * The size of the module's linear memory. quickjs-emscripten 0.32.0's setMemoryLimit bounds
 * each allocation, not a runtime's total: under Emscripten QuickJS's malloc_usable_size is 0,
 * so its accumulator grows 8 bytes per allocation whatever the size (measured: 320 MB of
 * ArrayBuffers and 100 MB of strings allocated under a 64 MB limit; a known upstream bug of
 * quickjs-emscripten). The host watches the linear memory instead, which only grows: growth
 * of more than the function's limit within one of its batches is its allocation.
 */
function linearBytes(module: QuickJSWASMModule): number {
  return (module as unknown as { module: { HEAPU8: Uint8Array } }).module.HEAPU8.length;
}

/** Starts the batch's budget, once: a new context's module evaluation and its batch share it. */
function startClock(batch: BatchState): void {
  if (batch.deadlineMicros === Infinity) batch.deadlineMicros = performance.now() * 1000 + batch.budgetMicros;
}

/**
 * Runs the harness and a function once in a throwaway context: V8 compiles a Wasm function on
 * its first call, about 4 ms of CPU for these paths, which would otherwise be billed to (and
 * could time out) the first batch.
 */
function warmUp(module: QuickJSWASMModule): void {
  const runtime = module.newRuntime();
  const vm = runtime.newContext();
  const log = vm.newFunction('hostLog', () => vm.true);
  const harness = vm.unwrapResult(vm.evalCode(guestHarness, 'harness.js', { type: 'global', strict: true }));
  const runner = vm.unwrapResult(vm.callFunction(harness, vm.undefined, log));
  const namespace = vm.unwrapResult(
    vm.evalCode('export const transform = (e) => ({ ...e, n: 1 });', 'warm.js', { type: 'module' }),
  );
  const transform = vm.getProp(namespace, 'transform');
  const input = vm.newString('[{"a":"b","c":[1,2.5,null,true]}]');
  const ctxJson = vm.newString('{}');
  const limit = vm.newNumber(10);
  const out = vm.unwrapResult(vm.callFunction(runner, vm.undefined, transform, input, ctxJson, limit, limit));
  vm.getString(out);
  for (const handle of [out, limit, ctxJson, input, transform, namespace, runner, harness, log])
    handle.dispose();
  vm.dispose();
  runtime.dispose();
}

export const createQuickJsRuntime = (options?: QuickJsRuntimeOptions): FunctionRuntime =>
  new QuickJsRuntime(options);

/** 'Name: message' of a guest error, read without running guest code (no toString call). */
function describeError(vm: QuickJSContext, error: QuickJSHandle): string {
  if (vm.typeof(error) !== 'object') {
    const text = vm.typeof(error) === 'string' ? vm.getString(error) : vm.typeof(error);
    return `Error: ${text}`;
  }
  const name = vm.getProp(error, 'name');
  const message = vm.getProp(error, 'message');
  const text = `${vm.typeof(name) === 'string' ? vm.getString(name) : 'Error'}: ${
    vm.typeof(message) === 'string' ? vm.getString(message) : ''
  }`;
  name.dispose();
  message.dispose();
  return text;
}

/** Reads the harness's framed results (guest-harness.ts), checking what the guest claims. */
function readResults(
  text: string,
  expected: number,
  batch: BatchState,
  limits: FunctionLimits,
): EventResult[] | undefined {
  const results: EventResult[] = [];
  let at = 0;
  let batchBytes = 0;
  const readLength = (): number | undefined => {
    const colon = text.indexOf(':', at);
    if (colon === -1) return undefined;
    const digits = text.slice(at, colon);
    if (!/^\d{1,9}$/.test(digits)) return undefined;
    at = colon + 1;
    return Number(digits);
  };
  const readPiece = (): string | undefined => {
    const length = readLength();
    if (length === undefined || at + length > text.length) return undefined;
    const piece = text.slice(at, at + length);
    at += length;
    return piece;
  };
  while (results.length < expected) {
    const kind = text[at];
    at += 1;
    if (kind === 'D') {
      results.push({ result: 'dropped' });
      continue;
    }
    if (kind === 'E' || kind === 'I') {
      const message = readPiece();
      if (message === undefined) return undefined;
      results.push({
        result: 'error',
        code: kind === 'E' ? 'function_error' : 'function_output_invalid',
        message,
      });
      continue;
    }
    if (kind !== 'O') return undefined;
    const count = readLength();
    if (count === undefined) return undefined;
    const outputs: unknown[] = [];
    let problem: string | undefined;
    for (let j = 0; j < count; j++) {
      const json = readPiece();
      if (json === undefined) return undefined;
      if (problem !== undefined) continue;
      const bytes = Buffer.byteLength(json);
      if (count > limits.maxOutputEvents)
        problem = `the function returned ${count} events, more than ${limits.maxOutputEvents}`;
      else if (bytes > limits.maxOutputBytesPerEvent)
        problem = `output ${j} is ${bytes} bytes of JSON, over ${limits.maxOutputBytesPerEvent}`;
      else if (batchBytes + bytes > limits.maxOutputBytesPerBatch)
        problem = `the batch's output is over ${limits.maxOutputBytesPerBatch} bytes of JSON`;
      else {
        batchBytes += bytes;
        try {
          // The host's parser, not JSON.parse: V8's has the escaped-key bug (libs/events json-text.ts).
          outputs.push(parseJsonText(json));
        } catch {
          problem = `output ${j} is not JSON`;
        }
      }
    }
    results.push(
      problem === undefined
        ? { result: 'ok', events: outputs }
        : { result: 'error', code: 'function_output_invalid', message: problem },
    );
  }
  if (text[at] !== 'L') return undefined;
  const dropped = text.slice(at + 1);
  if (!/^\d{1,9}$/.test(dropped)) return undefined;
  batch.logsDropped += Number(dropped);
  return results;
}

/**
 * Builds the guest's copy of a host value with the handle API; `__proto__` stays an own property. Each value costs several crossings into
 * the Wasm module; the `json` input is the cheaper default.
 */
function toGuest(vm: QuickJSContext, value: unknown): QuickJSHandle {
  if (value === null) return vm.null;
  switch (typeof value) {
    case 'string':
      return vm.newString(value);
    case 'number':
      return vm.newNumber(value);
    case 'boolean':
      return value ? vm.true : vm.false;
    case 'object': {
      if (Array.isArray(value)) {
        const array = vm.newArray();
        value.forEach((item, index) => {
          const handle = toGuest(vm, item);
          vm.setProp(array, index, handle);
          handle.dispose();
        });
        return array;
      }
      const object = vm.newObject();
      for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
        if (item === undefined) continue;
        const handle = toGuest(vm, item);
        // An assignment to `__proto__` would set the prototype: that key alone is defined, and
        // comes out read-only (defineProp has no writable flag).
        if (key === '__proto__')
          vm.defineProp(object, key, { value: handle, enumerable: true, configurable: true });
        else vm.setProp(object, key, handle);
        handle.dispose();
      }
      return object;
    }
    default:
      return vm.undefined;
  }
}
