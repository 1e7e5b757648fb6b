import type { Logger } from '@pipeline/logger';

export type ShutdownHook = () => Promise<void> | void;

/**
 * A resource a service's composition root opened, handed to main to register: composing the
 * graph stays apart from the process's signals, and the order of the list is the order of `add`.
 */
export interface ShutdownStep {
  name: string;
  run: ShutdownHook;
}

export interface ShutdownOptions {
  logger: Logger;
  /** Upper bound for all hooks together; past it the process exits with code 1. */
  timeoutMs: number;
  /** Injected by tests; the real one ends the process. */
  exit?: (code: number) => void;
}

/**
 * Ordered, bounded shutdown. Hooks run last-registered first, like `defer`: a service
 * registers its pools, then its producer, then its HTTP server, and shutdown stops accepting
 * requests, drains them, flushes the producer and only then closes the pools.
 */
export class Shutdown {
  private readonly hooks: ShutdownStep[] = [];
  private running: Promise<void> | undefined;
  private readonly exit: (code: number) => void;

  constructor(private readonly options: ShutdownOptions) {
    this.exit = options.exit ?? ((code) => process.exit(code));
  }

  get timeoutMs(): number {
    return this.options.timeoutMs;
  }

  get isShuttingDown(): boolean {
    return this.running !== undefined;
  }

  add(name: string, run: ShutdownHook): this {
    this.hooks.push({ name, run });
    return this;
  }

  /** A composition root's steps, in their order: the last of them runs first. */
  addSteps(steps: readonly ShutdownStep[]): this {
    for (const step of steps) this.add(step.name, step.run);
    return this;
  }

  /**
   * SIGTERM (Kubernetes) and SIGINT (Ctrl-C) start shutdown; another signal at least
   * `FORCE_AFTER_MS` later forces exit. Signals closer together are one request: Ctrl-C reaches
   * every process of the terminal's group and a supervisor such as concurrently forwards it again.
   */
  listen(signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT']): this {
    for (const signal of signals) process.on(signal, () => this.onSignal(signal));
    return this;
  }

  static readonly FORCE_AFTER_MS = 2000;
  private firstSignalAt = 0;

  /** Exposed for tests: what a received signal does. */
  onSignal(signal: string, now = Date.now()): void {
    if (!this.isShuttingDown) {
      this.firstSignalAt = now;
      void this.run(signal);
      return;
    }
    if (now - this.firstSignalAt < Shutdown.FORCE_AFTER_MS) return;
    this.options.logger.warn('another signal during shutdown; exiting now', { signal });
    this.exit(1);
  }

  /**
   * Runs every hook once, then exits: `exitCode` when all finished in time (0 unless the
   * shutdown itself is the consequence of a failure), 1 otherwise.
   */
  run(reason: string, exitCode = 0): Promise<void> {
    this.running ??= this.runHooks(reason, exitCode);
    return this.running;
  }

  private async runHooks(reason: string, exitCode: number): Promise<void> {
    const { logger, timeoutMs } = this.options;
    logger.info('shutting down', { reason, timeoutMs });
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
      timer.unref();
    });
    let failed = false;
    const all = (async () => {
      for (const hook of [...this.hooks].reverse()) {
        try {
          await hook.run();
          logger.info('shutdown step done', { step: hook.name });
        } catch (error) {
          failed = true;
          logger.error('shutdown step failed', { step: hook.name, error });
        }
      }
    })();
    const outcome = await Promise.race([all.then(() => 'done' as const), deadline]);
    clearTimeout(timer);
    if (outcome === 'timeout') {
      logger.error('shutdown did not finish in time; exiting anyway', { timeoutMs });
      this.exit(1);
      return;
    }
    logger.info('shutdown complete', { durationMs: Date.now() - started });
    this.exit(failed ? 1 : exitCode);
  }
}
