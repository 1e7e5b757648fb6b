import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from '@pipeline/logger';
import { returnedRows } from '../database/returned-rows';

/**
 * What the queue reports to the service's metrics. Declared here, so the queue knows no
 * implementation; the workers of each table extend it with their own outcomes.
 */
export interface QueueMetrics {
  /** Items of a dead worker put back in their queue by the reaper, by kind. */
  requeued(kind: string, items?: number): void;
}

/** A table whose rows are work items: status, worker_id, heartbeat_at, attempts, started/finished/updated_at. */
export interface QueueTable {
  name: 'task_runs' | 'jobs';
  /** The status of an item waiting for a worker. */
  waitingStatus: 'pending' | 'queued';
  /** Extra condition an item must meet to be claimed now (e.g. its retry backoff elapsed). */
  claimableWhen?: string;
  /** An SQL expression of an item's kind, the metrics' `kind` label (a column or a constant). */
  kindOf: string;
}

export interface QueueOptions {
  dataSource: DataSource;
  logger: Logger;
  table: QueueTable;
  /** What the queue's log lines call an item ("task run", "job"). */
  itemName: string;
  /** Unique per worker; the default is host:pid:random. */
  workerId?: string;
  /** Items executed at once by this worker. */
  concurrency: number;
  /**
   * Items of one account running at once across every worker of the table (all replicas): an
   * account with this many running items is skipped until one ends, so the others get workers.
   * Absent: no cap, only the fair order.
   */
  maxRunningPerAccount?: number;
  /** How often the queue is polled when idle (a wake() in this process polls at once). */
  pollIntervalMs: number;
  /** How often a running item's heartbeat is written (and its loss or cancellation noticed). */
  heartbeatIntervalMs: number;
  /** A running item whose heartbeat is older than this belongs to a dead worker. */
  staleAfterMs: number;
  /** Claims of an item in all; an item lost by its worker this many times fails instead of being requeued. */
  maxAttempts: number;
  /** Where the reaper's requeues and the executions' durations are counted. */
  metrics?: QueueMetrics;
}

export interface ClaimedItem {
  id: string;
  /** Claims so far, this one included. */
  attempts: number;
}

export interface ReapedItem {
  id: string;
  status: 'failed' | QueueTable['waitingStatus'];
}

/** Why an execution stopped before its end. */
export class Interrupted extends Error {
  constructor(readonly reason: 'lost' | 'shutdown') {
    super(`execution interrupted: ${reason}`);
    this.name = 'Interrupted';
  }
}

/** Accounts a claim tries in turn when the first ones are locked by other workers' claims. */
const CLAIM_CANDIDATES = 8;
/** PostgreSQL's largest integer: a cap no count reaches. */
const NO_CAP = 2_147_483_647;

/** A value for `now()` in a column assignment; `{ increment: n }` adds n, `{ decrement: true }` takes 1 off (not below 0). */
export const NOW = Symbol('now()');
export type ColumnValues = Record<string, unknown>;

export interface QueueHandlers {
  /** Executes one claimed item; every write goes through the Execution so it stays owned. */
  execute(item: ClaimedItem, execution: Execution): Promise<void>;
  /** Called in the transaction that requeued or failed the items of a dead worker. */
  onReaped?(tx: EntityManager, items: ReapedItem[]): Promise<void>;
}

/**
 * A work queue over a PostgreSQL table, shared by task runs and sync jobs.
 *
 * - Claim: picks the oldest waiting item of the account with the fewest running items (at most
 *   maxRunningPerAccount each) with FOR UPDATE SKIP LOCKED and marks it running with this
 *   worker's id, so two workers never run the same item and no account holds every worker.
 * - Heartbeat: every heartbeatIntervalMs, and at each progress write, the worker touches
 *   `heartbeat_at` only while the item is still running and still its own; when the item was
 *   cancelled (or taken from it) the update finds nothing and the execution is aborted.
 * - Reaper: every worker requeues running items whose heartbeat is older than staleAfterMs (the
 *   process died), or fails them with `worker_lost` once they were claimed maxAttempts times.
 * - Stop: no more claims; executions in progress are interrupted and put back at once.
 * Every write of an execution is conditioned on (status running, worker_id this worker, attempts
 * this claim's), so a late write of a lost or cancelled item changes nothing, even when this same
 * worker has claimed the item again since.
 */
export class PgWorkQueue {
  readonly workerId: string;
  private readonly inFlight = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private stopping = false;
  private loopDone: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private lastReapAt = 0;

  constructor(
    private readonly options: QueueOptions,
    private readonly handlers: QueueHandlers,
  ) {
    this.workerId = options.workerId ?? `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  }

  get dataSource(): DataSource {
    return this.options.dataSource;
  }

  start(): void {
    this.loopDone ??= this.loop();
  }

  /** Polls now instead of at the next interval. */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * The item was cancelled (its row is no longer running): its execution here, if any, stops now
   * instead of at its next heartbeat. It writes nothing more: the item is not its own.
   */
  cancelled(id: string): void {
    this.inFlight.get(id)?.controller.abort(new Interrupted('lost'));
  }

  /** Stops claiming, interrupts the executions in progress and puts their items back. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    // The loop first: a claim it has in progress becomes an execution to interrupt, not one
    // that starts after the interruptions and keeps its item running.
    await this.loopDone;
    for (const { controller } of this.inFlight.values()) controller.abort(new Interrupted('shutdown'));
    await Promise.all([...this.inFlight.values()].map((r) => r.done));
  }

  /** Requeues (or fails) items whose worker stopped heartbeating. */
  async reap(): Promise<{ requeued: string[]; failed: string[] }> {
    const { table, staleAfterMs, maxAttempts } = this.options;
    const rows = await this.options.dataSource.transaction(async (tx) => {
      const reaped = returnedRows<ReapedItem & { kind: string }>(
        await tx.query(
          `UPDATE ${table.name}
              SET status = CASE WHEN attempts >= $2 THEN 'failed' ELSE '${table.waitingStatus}' END,
                  worker_id = NULL, heartbeat_at = NULL, updated_at = now(),
                  finished_at = CASE WHEN attempts >= $2 THEN now() ELSE NULL END,
                  error = CASE WHEN attempts >= $2
                    THEN jsonb_build_object('code', 'worker_lost',
                           'message', 'The worker executing it stopped ' || attempts || ' time(s)')
                    ELSE error END
            WHERE status = 'running' AND heartbeat_at < now() - $1::double precision * interval '1 millisecond'
            RETURNING id, status, ${table.kindOf} AS kind`,
          [staleAfterMs, maxAttempts],
        ),
      );
      if (reaped.length > 0 && this.handlers.onReaped)
        await this.handlers.onReaped(
          tx,
          reaped.map(({ id, status }) => ({ id, status })),
        );
      return reaped;
    });
    for (const row of rows) if (row.status !== 'failed') this.options.metrics?.requeued(row.kind);
    const requeued = rows.filter((r) => r.status !== 'failed').map((r) => r.id);
    const failed = rows.filter((r) => r.status === 'failed').map((r) => r.id);
    if (rows.length > 0)
      this.options.logger.warn(`${this.options.itemName}s of a lost worker`, { requeued, failed });
    return { requeued, failed };
  }

  /**
   * Claims the next waiting item, or null: the oldest item of the account with the fewest running
   * items (oldest waiting item first among equals), skipping accounts already at
   * maxRunningPerAccount. A first-in-first-out claim let one account's backlog hold every worker.
   *
   * The running count and the claim must agree across replicas: two workers counting 1 running
   * item of a capped-at-2 account at once would both claim. So a claim for an account holds a
   * transaction-scoped advisory lock of (table, account) and counts again under it; a worker that
   * finds the lock taken tries the next account instead of waiting. FOR UPDATE SKIP LOCKED still
   * keeps two workers off the same item.
   */
  async claim(): Promise<ClaimedItem | null> {
    const { table } = this.options;
    const maxRunningPerAccount = this.options.maxRunningPerAccount ?? NO_CAP;
    const waiting = `status = '${table.waitingStatus}'${table.claimableWhen ? ` AND ${table.claimableWhen}` : ''}`;
    return this.options.dataSource.transaction(async (tx) => {
      const candidates = returnedRows<{ account_id: string }>(
        await tx.query(
          `SELECT w.account_id
             FROM (SELECT account_id, min(created_at) AS oldest FROM ${table.name}
                    WHERE ${waiting} GROUP BY account_id) w
             LEFT JOIN (SELECT account_id, count(*) AS running FROM ${table.name}
                         WHERE status = 'running' GROUP BY account_id) r USING (account_id)
            WHERE coalesce(r.running, 0) < $1
            ORDER BY coalesce(r.running, 0), w.oldest, w.account_id
            LIMIT ${CLAIM_CANDIDATES}`,
          [maxRunningPerAccount],
        ),
      );
      for (const { account_id: accountId } of candidates) {
        const [lock] = returnedRows<{ locked: boolean }>(
          await tx.query('SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2::text)) AS locked', [
            `${table.name} claim`,
            accountId,
          ]),
        );
        if (!lock?.locked) continue;
        const [claimed] = returnedRows<ClaimedItem>(
          await tx.query(
            `UPDATE ${table.name}
                SET status = 'running', worker_id = $1, heartbeat_at = now(), started_at = now(),
                    attempts = attempts + 1, updated_at = now()
              WHERE ${waiting}
                AND id = (SELECT id FROM ${table.name}
                           WHERE ${waiting} AND account_id = $2
                             AND (SELECT count(*) FROM ${table.name}
                                   WHERE account_id = $2 AND status = 'running') < $3
                           ORDER BY created_at, id FOR UPDATE SKIP LOCKED LIMIT 1)
              RETURNING id, attempts`,
            [this.workerId, accountId, maxRunningPerAccount],
          ),
        );
        if (claimed) return claimed;
      }
      return null;
    });
  }

  /** Starts executing a claimed item in the background (the loop does this; tests may too). */
  track(item: ClaimedItem): void {
    const controller = new AbortController();
    const execution = new Execution(this, this.options.table.name, item.id, controller, item.attempts);
    const heartbeat = setInterval(() => {
      execution.heartbeat().catch((error: unknown) => {
        if (!(error instanceof Interrupted))
          this.options.logger.warn(`${this.options.itemName} heartbeat failed`, { id: item.id, error });
      });
    }, this.options.heartbeatIntervalMs);
    heartbeat.unref();
    const done = this.handlers
      .execute(item, execution)
      .catch((error: unknown) => {
        this.options.logger.error(`${this.options.itemName} execution failed`, { id: item.id, error });
      })
      .finally(() => {
        clearInterval(heartbeat);
        this.inFlight.delete(item.id);
        this.wake();
      });
    this.inFlight.set(item.id, { controller, done });
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      try {
        if (Date.now() - this.lastReapAt >= this.options.staleAfterMs / 2) {
          this.lastReapAt = Date.now();
          await this.reap();
        }
        while (!this.stopping && this.inFlight.size < this.options.concurrency) {
          const item = await this.claim();
          if (!item) break;
          this.track(item);
        }
      } catch (error) {
        this.options.logger.error(`${this.options.itemName} queue poll failed`, { error });
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
}

/** What a deployment sets for a worker of one queue (the table and its executor are the worker's own). */
export type WorkerSettings = Omit<QueueOptions, 'table' | 'itemName'>;

/** A worker of one queue: runs what it claims, and lets the process start, wake and stop it. */
export abstract class QueueWorker {
  protected readonly queue: PgWorkQueue;

  constructor(settings: WorkerSettings, table: QueueTable, itemName: string) {
    this.queue = new PgWorkQueue(
      { ...settings, table, itemName },
      {
        execute: (item, execution) => this.execute(item, execution),
        onReaped: (tx, items) => this.onReaped(tx, items),
      },
    );
  }

  get workerId(): string {
    return this.queue.workerId;
  }

  start(): void {
    this.queue.start();
  }

  /** Polls now instead of at the next interval. */
  wake(): void {
    this.queue.wake();
  }

  /** Stops claiming, interrupts the executions in progress and puts their items back. */
  stop(): Promise<void> {
    return this.queue.stop();
  }

  /** The item was cancelled: its execution in this process, if any, stops now. */
  cancelled(id: string): void {
    this.queue.cancelled(id);
  }

  /** Requeues (or fails) items whose worker stopped heartbeating. */
  reap(): Promise<{ requeued: string[]; failed: string[] }> {
    return this.queue.reap();
  }

  protected abstract execute(item: ClaimedItem, execution: Execution): Promise<void>;

  /** Called in the transaction that requeued or failed a dead worker's items. */
  protected onReaped(_tx: EntityManager, _items: ReapedItem[]): Promise<void> {
    return Promise.resolve();
  }
}

/** One claimed item's execution: its abort signal and the writes that only land while it is owned. */
export class Execution {
  /** When this claim's execution began (Date.now()). */
  readonly startedAt = Date.now();

  constructor(
    private readonly queue: PgWorkQueue,
    private readonly table: string,
    readonly id: string,
    private readonly controller: AbortController,
    /** The claim's attempt number: the lease a write must still hold. */
    private readonly attempt: number,
  ) {}

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Throws the interruption if the execution was aborted. */
  checkpoint(): void {
    if (this.signal.aborted) throw this.signal.reason;
  }

  /** Touches the heartbeat; when the item is no longer this worker's, aborts and throws. */
  async heartbeat(): Promise<void> {
    await this.update({});
  }

  /**
   * Writes columns of the running item (and its heartbeat), in `manager`'s transaction if given;
   * aborts and throws when the item is no longer owned.
   */
  async update(values: ColumnValues, manager?: EntityManager): Promise<void> {
    const owned = await this.write(manager ?? this.queue.dataSource.manager, {
      ...values,
      heartbeat_at: NOW,
    });
    if (!owned) {
      this.controller.abort(new Interrupted('lost'));
      throw new Interrupted('lost');
    }
  }

  /**
   * Ends the execution: writes the final columns (status included) and releases the item, then
   * runs `then` in the same transaction. False (and `then` not run) when the item was no longer owned.
   */
  async settle(values: ColumnValues, then?: (tx: EntityManager) => Promise<void>): Promise<boolean> {
    return this.queue.dataSource.transaction(async (tx) => {
      const owned = await this.write(tx, { ...values, worker_id: null, updated_at: NOW });
      if (owned && then) await then(tx);
      return owned;
    });
  }

  /** Puts an interrupted item back; the interrupted claim does not count as an attempt. */
  async putBack(
    waitingStatus: QueueTable['waitingStatus'],
    then?: (tx: EntityManager) => Promise<void>,
    extra: ColumnValues = {},
  ): Promise<boolean> {
    return this.settle(
      {
        ...extra,
        status: waitingStatus,
        heartbeat_at: null,
        started_at: null,
        attempts: { decrement: true },
      },
      then,
    );
  }

  /** The step's result, or the abort reason as soon as the signal fires. */
  untilAborted<T>(promise: Promise<T>): Promise<T> {
    const signal = this.signal;
    if (signal.aborted) {
      // The step was started before the abort was seen; its own rejection (a cancelled read)
      // must not surface as an unhandled one that takes the process down.
      promise.catch(() => undefined);
      return Promise.reject(signal.reason as Error);
    }
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

  private async write(manager: EntityManager, values: ColumnValues): Promise<boolean> {
    const params: unknown[] = [this.id, this.queue.workerId, this.attempt];
    const assignments = Object.entries(values).map(([column, value]) => {
      if (value === NOW) return `${column} = now()`;
      if (isDecrement(value)) return `${column} = greatest(${column} - 1, 0)`;
      if (isIncrement(value)) {
        params.push(value.increment);
        return `${column} = ${column} + $${params.length}`;
      }
      params.push(value);
      return `${column} = $${params.length}`;
    });
    const set = assignments.length > 0 ? assignments.join(', ') : 'heartbeat_at = heartbeat_at';
    const result: unknown = await manager.query(
      `UPDATE ${this.table} SET ${set} WHERE id = $1 AND worker_id = $2 AND attempts = $3 AND status = 'running' RETURNING id`,
      params,
    );
    return returnedRows(result).length > 0;
  }
}

function isIncrement(value: unknown): value is { increment: number } {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { increment?: unknown }).increment === 'number'
  );
}

function isDecrement(value: unknown): value is { decrement: true } {
  return typeof value === 'object' && value !== null && (value as { decrement?: unknown }).decrement === true;
}
