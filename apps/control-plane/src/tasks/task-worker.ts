import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { Logger } from '@pipeline/logger';
import { TaskEntity } from './task.entity';
import { initialProgress, returnedRows } from './task.service';
import { TaskRunEntity, type RunError, type RunProgress } from './task-run.entity';
import { findTemplate } from './templates/catalog';
import type { StepContext } from './templates/template';
import type { WarehouseReader } from './warehouse-reader';

export interface TaskWorkerOptions {
  dataSource: DataSource;
  warehouse: WarehouseReader;
  logger: Logger;
  /** Unique per worker; the default is host:pid:random. */
  workerId?: string;
  /** Runs executed at once by this worker. */
  concurrency: number;
  /** How often the queue is polled when idle (a start in this process wakes it at once). */
  pollIntervalMs: number;
  /** How often a running run's heartbeat is written (and cancellation noticed). */
  heartbeatIntervalMs: number;
  /** A running run whose heartbeat is older than this belongs to a dead worker. */
  staleAfterMs: number;
  /** Claims of a run in all; a run lost by its worker this many times fails instead of being requeued. */
  maxAttempts: number;
  /** Called before each step, with the run's abort signal (tests use it to hold a run mid-way). */
  beforeStep?: (run: { id: string; taskId: string }, stepId: string, signal: AbortSignal) => Promise<void>;
}

/** Why a run's execution stopped before its end. */
class RunInterrupted extends Error {
  constructor(readonly reason: 'lost' | 'shutdown') {
    super(`run interrupted: ${reason}`);
  }
}

/**
 * Executes task runs from the PostgreSQL queue (the task_runs table).
 *
 * - Claim: one UPDATE picks the oldest pending run with FOR UPDATE SKIP LOCKED and marks it
 *   running with this worker's id, so two workers never run the same run.
 * - Heartbeat: every heartbeatIntervalMs, and before each step, the worker touches
 *   `heartbeat_at` only while the run is still running and still its own; when the run was
 *   cancelled (or taken from it) the update finds nothing and the execution stops.
 * - Reaper: every worker requeues running runs whose heartbeat is older than staleAfterMs (the
 *   process died), or fails them with `worker_lost` once they were claimed maxAttempts times.
 * - Stop: no more claims; runs in progress are interrupted and put back to pending at once.
 * Every write of an execution is conditioned on (status running, worker_id this worker), so a
 * late write of a lost or cancelled run changes nothing.
 */
export class TaskWorker {
  readonly workerId: string;
  private readonly inFlight = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private lastReapAt = 0;

  constructor(private readonly options: TaskWorkerOptions) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  }

  start(): void {
    this.loopDone ??= this.loop();
  }

  /** Polls now instead of at the next interval. */
  wake(): void {
    this.wakeUp?.();
  }

  /** Stops claiming, interrupts the runs in progress and puts them back in the queue. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    for (const { controller } of this.inFlight.values()) controller.abort(new RunInterrupted('shutdown'));
    await Promise.all([...this.inFlight.values()].map((r) => r.done));
    await this.loopDone;
  }

  /** Requeues (or fails) runs whose worker stopped heartbeating. */
  async reap(): Promise<{ requeued: string[]; failed: string[] }> {
    const result: unknown = await this.options.dataSource.query(
      `UPDATE task_runs
          SET status = CASE WHEN attempts >= $2 THEN 'failed' ELSE 'pending' END,
              worker_id = NULL, heartbeat_at = NULL, updated_at = now(),
              finished_at = CASE WHEN attempts >= $2 THEN now() ELSE NULL END,
              error = CASE WHEN attempts >= $2
                THEN jsonb_build_object('code', 'worker_lost',
                       'message', 'The worker executing the run stopped ' || attempts || ' time(s)')
                ELSE error END
        WHERE status = 'running' AND heartbeat_at < now() - $1::double precision * interval '1 millisecond'
        RETURNING id, status`,
      [this.options.staleAfterMs, this.options.maxAttempts],
    );
    const rows = returnedRows<{ id: string; status: string }>(result);
    const requeued = rows.filter((r) => r.status === 'pending').map((r) => r.id);
    const failed = rows.filter((r) => r.status === 'failed').map((r) => r.id);
    if (rows.length > 0) this.options.logger.warn('task runs of a lost worker', { requeued, failed });
    return { requeued, failed };
  }

  /** Claims the oldest pending run, or null. */
  async claim(): Promise<TaskRunEntity | null> {
    const result: unknown = await this.options.dataSource.query(
      `UPDATE task_runs
          SET status = 'running', worker_id = $1, heartbeat_at = now(), started_at = now(),
              attempts = attempts + 1, updated_at = now()
        WHERE status = 'pending'
          AND id = (SELECT id FROM task_runs WHERE status = 'pending'
                     ORDER BY created_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
        RETURNING id`,
      [this.workerId],
    );
    const [claimed] = returnedRows<{ id: string }>(result);
    if (!claimed) return null;
    return this.options.dataSource.getRepository(TaskRunEntity).findOneByOrFail({ id: claimed.id });
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        if (Date.now() - this.lastReapAt >= this.options.staleAfterMs / 2) {
          this.lastReapAt = Date.now();
          await this.reap();
        }
        while (!this.stopping && this.inFlight.size < this.options.concurrency) {
          const run = await this.claim();
          if (!run) break;
          this.track(run);
        }
      } catch (error) {
        this.options.logger.error('task queue poll failed', { error });
      }
      if (this.stopping) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.pollIntervalMs);
        this.wakeUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wakeUp = undefined;
    }
  }

  private track(run: TaskRunEntity): void {
    const controller = new AbortController();
    const done = this.execute(run, controller)
      .catch((error: unknown) => {
        this.options.logger.error('task run execution failed', { runId: run.id, error });
      })
      .finally(() => {
        this.inFlight.delete(run.id);
        this.wake();
      });
    this.inFlight.set(run.id, { controller, done });
  }

  /** Runs the template's steps, recording progress; ends in succeeded or failed (or stops if interrupted). */
  private async execute(run: TaskRunEntity, controller: AbortController): Promise<void> {
    const { dataSource, logger } = this.options;
    const signal = controller.signal;
    const task = await dataSource.getRepository(TaskEntity).findOneBy({ id: run.taskId });
    const template = task ? findTemplate(task.templateId) : undefined;
    if (!task || !template) {
      await this.finish(run.id, 'failed', null, {
        code: 'unknown_template',
        message: `Template ${task?.templateId ?? '(task deleted)'} is not offered by this version`,
      });
      return;
    }
    const progress = initialProgress(template);
    const heartbeat = setInterval(() => {
      this.heartbeat(run.id)
        .then((owned) => {
          if (!owned) controller.abort(new RunInterrupted('lost'));
        })
        .catch((error: unknown) => logger.warn('task run heartbeat failed', { runId: run.id, error }));
    }, this.options.heartbeatIntervalMs);
    heartbeat.unref();
    logger.info('task run started', {
      runId: run.id,
      taskId: run.taskId,
      templateId: template.id,
      attempt: run.attempts,
    });

    const state: Record<string, unknown> = {};
    const context: StepContext<never> = {
      accountId: run.accountId,
      runId: run.id,
      params: run.params as never,
      dataSource,
      warehouse: this.options.warehouse,
      signal,
      checkpoint: () => {
        if (signal.aborted) throw signal.reason;
      },
      now: new Date(),
      state,
    };
    let current: (typeof template.steps)[number] | undefined;
    try {
      for (const step of template.steps) {
        current = step;
        if (!(await this.heartbeat(run.id))) throw new RunInterrupted('lost');
        context.checkpoint();
        this.markStep(progress, step.id, 'running');
        await this.saveProgress(run.id, progress);
        if (this.options.beforeStep)
          await untilAborted(this.options.beforeStep(run, step.id, signal), signal);
        state[step.id] = await untilAborted(step.run(context), signal);
        this.markStep(progress, step.id, 'succeeded');
        await this.saveProgress(run.id, progress);
      }
      const last = template.steps[template.steps.length - 1];
      const report = (last ? state[last.id] : {}) as Record<string, unknown>;
      const finished = await this.finish(run.id, 'succeeded', report, null, progress);
      logger.info('task run finished', { runId: run.id, status: finished ? 'succeeded' : 'lost' });
    } catch (error) {
      const interruption = signal.aborted ? signal.reason : error;
      if (interruption instanceof RunInterrupted) {
        if (interruption.reason === 'shutdown') await this.requeue(run.id);
        logger.info('task run interrupted', {
          runId: run.id,
          reason: interruption.reason,
          step: current?.id,
        });
        return;
      }
      if (current) this.markStep(progress, current.id, 'failed');
      const message = error instanceof Error ? error.message : String(error);
      logger.warn('task run failed', { runId: run.id, step: current?.id, error: message });
      await this.finish(
        run.id,
        'failed',
        null,
        { code: 'step_failed', message, step: current?.id },
        progress,
      );
    } finally {
      clearInterval(heartbeat);
    }
  }

  private markStep(progress: RunProgress, stepId: string, status: 'running' | 'succeeded' | 'failed'): void {
    const step = progress.steps.find((s) => s.id === stepId);
    if (!step) return;
    const now = new Date().toISOString();
    step.status = status;
    if (status === 'running') step.startedAt = now;
    else step.finishedAt = now;
    progress.completedSteps = progress.steps.filter((s) => s.status === 'succeeded').length;
    progress.currentStep = status === 'running' ? stepId : null;
  }

  /** Touches the heartbeat; false when the run is no longer running under this worker. */
  private async heartbeat(runId: string): Promise<boolean> {
    return this.owned(
      await this.options.dataSource.query(
        `UPDATE task_runs SET heartbeat_at = now() WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING id`,
        [runId, this.workerId],
      ),
    );
  }

  private async saveProgress(runId: string, progress: RunProgress): Promise<void> {
    const owned = this.owned(
      await this.options.dataSource.query(
        `UPDATE task_runs SET progress = $3, heartbeat_at = now(), updated_at = now()
          WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING id`,
        [runId, this.workerId, JSON.stringify(progress)],
      ),
    );
    if (!owned) throw new RunInterrupted('lost');
  }

  private async finish(
    runId: string,
    status: 'succeeded' | 'failed',
    result: Record<string, unknown> | null,
    error: RunError | null,
    progress?: RunProgress,
  ): Promise<boolean> {
    return this.owned(
      await this.options.dataSource.query(
        `UPDATE task_runs
            SET status = $3, result = $4, error = $5, progress = COALESCE($6, progress),
                worker_id = NULL, finished_at = now(), updated_at = now()
          WHERE id = $1 AND worker_id = $2 AND status = 'running' RETURNING id`,
        [
          runId,
          this.workerId,
          status,
          result === null ? null : JSON.stringify(result),
          error === null ? null : JSON.stringify(error),
          progress ? JSON.stringify(progress) : null,
        ],
      ),
    );
  }

  /** Puts an interrupted run back in the queue; the interrupted claim does not count as an attempt. */
  private async requeue(runId: string): Promise<void> {
    await this.options.dataSource.query(
      `UPDATE task_runs SET status = 'pending', worker_id = NULL, heartbeat_at = NULL,
              attempts = greatest(attempts - 1, 0), updated_at = now()
        WHERE id = $1 AND worker_id = $2 AND status = 'running'`,
      [runId, this.workerId],
    );
  }

  private owned(result: unknown): boolean {
    return returnedRows(result).length > 0;
  }
}

/** The step's result, or the abort reason as soon as the signal fires. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}
