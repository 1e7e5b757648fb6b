import { type ChildProcess, fork } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { AppError } from '@pipeline/errors';
import {
  batchCpuBudgetMs,
  defaultFunctionLimits,
  type BatchRun,
  type FunctionCode,
  type FunctionContext,
  type FunctionLimits,
  type FunctionRuntime,
} from '../function-contract';
import type { SandboxAnswer, SandboxRequest } from './sandbox-host';

export interface IsolatedVmRuntimeOptions {
  /** Sandbox child processes; a version always goes to the same one, so it is warm there. */
  processes?: number;
  /** Function versions a child keeps warm, one isolate each (default 64); the least recently used go first. */
  isolatesPerProcess?: number;
  /** When the parent runs as root: the user and group the children drop to. */
  uid?: number;
  gid?: number;
}

interface InFlight {
  resolve: (run: BatchRun) => void;
  timer: NodeJS.Timeout;
}

interface Child {
  process: ChildProcess;
  inFlight: Map<number, InFlight>;
}

/**
 * The parent's deadline for one batch: the child's own timeouts (the batch's budget, and the cap
 * for a new version's top level) plus 2 s for the fork, the child's warm-up and the copies on a
 * loaded machine. A child that misses it is stuck where isolated-vm's timeout cannot reach (a
 * native call), so it is killed.
 */
const wallDeadlineMs = (limits: FunctionLimits, events: number): number =>
  batchCpuBudgetMs(limits, events) + limits.maxBatchCpuMs + 2_000;

/** The compiled child entry: next to this file in dist, or in dist when this file is a source under jest. */
function sandboxHostPath(): string {
  if (!__filename.endsWith('.ts')) return path.join(__dirname, 'sandbox-host.js');
  const built = path.join(__dirname, '../../dist/isolated-vm/sandbox-host.js');
  if (!existsSync(built))
    throw new AppError(
      500,
      'functions_sandbox_not_built',
      `${built} is missing: the sandbox child runs from dist, run \`pnpm exec nx run-many -t build -p @pipeline/functions\` first`,
    );
  return built;
}

const closedError = (): AppError =>
  new AppError(503, 'functions_runtime_closed', 'the isolated-vm runtime is closed');

const failed = (message: string): BatchRun => ({
  outcome: 'failed',
  code: 'function_crashed',
  message,
  logs: [],
  logsDropped: 0,
  cpuMicros: 0,
});

/**
 * Runs functions in isolated-vm isolates inside credential-free child processes (sandbox-host.ts):
 * forked with an empty environment, so tenant code that escaped V8 would find no secret, and
 * killed and restarted when they stop answering.
 */
export class IsolatedVmRuntime implements FunctionRuntime {
  readonly name = 'isolated-vm';
  private readonly hostPath = sandboxHostPath();
  private readonly children: (Child | undefined)[];
  private readonly queues = new Map<string, Promise<BatchRun>>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly options: IsolatedVmRuntimeOptions = {}) {
    this.children = new Array<Child | undefined>(Math.max(1, options.processes ?? 1)).fill(undefined);
  }

  /** Process ids of the children running now (for tests and supervision). */
  get pids(): (number | undefined)[] {
    return this.children.map((child) => child?.process.pid);
  }

  run(
    fn: FunctionCode,
    events: readonly object[],
    ctx: FunctionContext,
    limits: FunctionLimits = defaultFunctionLimits,
  ): Promise<BatchRun> {
    if (this.closed) return Promise.reject(closedError());
    // One batch of a version at a time, as the child runs them anyway: the deadline then starts
    // when the child can start the batch, not behind its version's other batches.
    const previous = this.queues.get(fn.versionId) ?? Promise.resolve();
    const next = previous.then(
      () => this.dispatch(fn, events, ctx, limits),
      () => this.dispatch(fn, events, ctx, limits),
    );
    this.queues.set(fn.versionId, next);
    const done = (): void => {
      if (this.queues.get(fn.versionId) === next) this.queues.delete(fn.versionId);
    };
    void next.then(done, done);
    return next;
  }

  private dispatch(
    fn: FunctionCode,
    events: readonly object[],
    ctx: FunctionContext,
    limits: FunctionLimits,
  ): Promise<BatchRun> {
    if (this.closed) return Promise.reject(closedError());
    const slot = this.slotOf(fn.versionId);
    const child = this.children[slot] ?? this.spawn(slot);
    const id = this.nextId++;
    return new Promise<BatchRun>((resolve) => {
      const deadline = wallDeadlineMs(limits, events.length);
      const timer = setTimeout(() => {
        this.kill(child, `the sandbox did not answer within ${deadline} ms and was restarted`);
      }, deadline);
      child.inFlight.set(id, { resolve, timer });
      const request: SandboxRequest = { id, fn, events, ctx, limits };
      child.process.send(request, (error) => {
        if (error)
          this.settle(child, id, failed(`the batch could not be sent to the sandbox: ${error.message}`));
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      this.children.map(async (child) => {
        if (!child) return;
        const exited = new Promise<void>((resolve) => {
          if (child.process.exitCode !== null || child.process.signalCode !== null) resolve();
          else child.process.once('exit', () => resolve());
        });
        this.kill(child, 'the runtime was closed');
        await exited;
      }),
    );
  }

  private slotOf(versionId: string): number {
    if (this.children.length === 1) return 0;
    return createHash('sha256').update(versionId).digest().readUInt32BE(0) % this.children.length;
  }

  private spawn(slot: number): Child {
    const process = fork(this.hostPath, [String(this.options.isolatesPerProcess ?? 64)], {
      // Nothing of the parent's environment (credentials, URLs) reaches the process running tenant code.
      env: {},
      execArgv: ['--no-node-snapshot'],
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      ...(this.options.uid !== undefined ? { uid: this.options.uid } : {}),
      ...(this.options.gid !== undefined ? { gid: this.options.gid } : {}),
    });
    const child: Child = { process, inFlight: new Map() };
    this.children[slot] = child;
    process.on('message', (answer: SandboxAnswer) => this.settle(child, answer.id, answer.run));
    process.on('exit', (code, signal) => {
      if (this.children[slot] === child) this.children[slot] = undefined;
      this.failAll(child, `the sandbox process exited (${signal ?? `code ${code}`})`);
    });
    // A failed fork or a broken channel: 'exit' may never come, so the child is dropped here too.
    process.on('error', (error) => this.kill(child, `the sandbox process failed: ${error.message}`));
    // The parent may exit while a child idles; the child's channel must not hold it open.
    process.unref();
    process.channel?.unref();
    return child;
  }

  private settle(child: Child, id: number, run: BatchRun): void {
    const entry = child.inFlight.get(id);
    if (!entry) return;
    child.inFlight.delete(id);
    clearTimeout(entry.timer);
    entry.resolve(run);
  }

  private failAll(child: Child, message: string): void {
    for (const id of [...child.inFlight.keys()]) this.settle(child, id, failed(message));
  }

  private kill(child: Child, message: string): void {
    const slot = this.children.indexOf(child);
    if (slot >= 0) this.children[slot] = undefined;
    this.failAll(child, message);
    child.process.kill('SIGKILL');
  }
}

export const createIsolatedVmRuntime = (options: IsolatedVmRuntimeOptions = {}): IsolatedVmRuntime =>
  new IsolatedVmRuntime(options);
