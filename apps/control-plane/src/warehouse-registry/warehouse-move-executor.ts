import type { DataSource, EntityManager } from 'typeorm';
import type { AccountLocation, WarehouseEngine } from '@pipeline/destinations';
import type { Logger } from '@pipeline/logger';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import {
  JobFailure,
  TransientJobError,
  type JobContext,
  type JobCounts,
  type JobExecutor,
  type JobTransition,
} from '../jobs/job-executor';
import type { JobEntity } from '../jobs/job.entity';
import {
  WarehouseMoveEntity,
  type MoveProgress,
  type MoveVerification,
  type TableVerification,
  type WarehouseMoveStage,
} from './warehouse-move.entity';
import type { EngineFor, WarehouseRegistry } from './warehouse-registry';
import { beforeCutOver, endUnfinishedMove } from './warehouse-moves';

export interface WarehouseMoveTimings {
  /** From setting the move target to the backfill (WAREHOUSE_MOVE_CONSUMER_WAIT_MS). */
  consumerWaitMs: number;
  /** From the cut-over to the drain's copy (WAREHOUSE_MOVE_DRAIN_MS). */
  drainMs: number;
  /** Rows per copied batch (WAREHOUSE_MOVE_BATCH_ROWS). */
  batchRows: number;
  /**
   * A move not done this long after it was created fails (`warehouse_move_timed_out`):
   * WAREHOUSE_MOVE_DEADLINE_MS.
   */
  deadlineMs?: number;
  /** Comparisons of a day whose source rows are not all on the target yet (rows in flight). */
  verifyAttempts?: number;
  /** Between those comparisons. */
  verifyRetryMs?: number;
}

export interface WarehouseMoveExecutorDependencies {
  dataSource: DataSource;
  registry: WarehouseRegistry;
  engineFor: EngineFor;
  tenantChanges?: TenantChangePublisher;
  logger: Logger;
  timings: WarehouseMoveTimings;
}

/** 24 h: a day for the largest copy, far less than "for good". */
export const defaultMoveDeadlineMs = 86_400_000;

/** Copies before the cut-over: the first, and one more when the comparison finds rows missing. */
const MAX_COPY_ATTEMPTS = 2;

/** Waits until `until` (ms since the epoch) or the abort; the job's heartbeat runs meanwhile. */
function waitUntil(until: number, signal: AbortSignal): Promise<void> {
  const remaining = until - Date.now();
  if (remaining <= 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', aborted);
    };
    const aborted = () => {
      done();
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      done();
      resolve();
    }, remaining);
    if (signal.aborted) aborted();
    else signal.addEventListener('abort', aborted, { once: true });
  });
}

/**
 * Runs a move between warehouses as a job, stage by stage; each stage is saved when it ends and
 * can run again after a restart without harm:
 * - copy: the placement's move target makes writers fill both warehouses; after the consumers'
 *   cache time every table is copied (merges are idempotent, rows already there stay).
 * - verify: per table and UTC day, every key of the source must be on the target; missing rows
 *   copy once more, then the move fails and the account stays on its source.
 * - cut_over: the placement moves (epoch + 1), writers resolve it again.
 * - drain: after writers holding the old epoch must be done, the source is copied and compared
 *   once more.
 * - retire: the account's schema on the source is dropped.
 */
export class WarehouseMoveExecutor implements JobExecutor {
  readonly kind = 'warehouse_move' as const;

  constructor(private readonly deps: WarehouseMoveExecutorDependencies) {}

  async execute(context: JobContext): Promise<JobCounts> {
    const { dataSource, registry, engineFor } = this.deps;
    const repository = dataSource.getRepository(WarehouseMoveEntity);
    const move = await repository.findOneByOrFail({ jobId: context.job.id });
    // Only a finished move's side is ever null (warehouse_moves_active_sides): nothing to run.
    if (move.fromWarehouseId === null || move.toWarehouseId === null) return { rowsRead: 0, rowsWritten: 0 };
    const source = engineFor(registry.connectionOf(await registry.find(move.fromWarehouseId)));
    const target = engineFor(registry.connectionOf(await registry.find(move.toWarehouseId)));
    const account: AccountLocation = { accountId: move.accountId, schema: move.schema };
    const onTarget: AccountLocation = { accountId: move.accountId, schema: move.toSchema ?? move.schema };
    const counts: JobCounts = { rowsRead: 0, rowsWritten: 0 };
    // The move's deadline counts from its creation, across restarts: a target that answers
    // slowly, or a source that is gone, ends it instead of holding a job slot for good.
    const deadlineMs = this.deps.timings.deadlineMs ?? defaultMoveDeadlineMs;
    const deadlineAt = move.createdAt.getTime() + deadlineMs;
    const expiry = new AbortController();
    const timer = setTimeout(() => expiry.abort(), Math.max(0, deadlineAt - Date.now()));
    const signal = AbortSignal.any([context.signal, expiry.signal]);
    const run: MoveRun = { move, source, target, account, onTarget, counts, context: { ...context, signal } };
    const expired = new Promise<never>((_, reject) =>
      expiry.signal.addEventListener('abort', () => reject(new Error('deadline')), { once: true }),
    );
    expired.catch(() => undefined);
    try {
      // Raced: an engine call the deadline cannot interrupt is abandoned (its connection's own
      // read deadline ends it).
      return await Promise.race([this.stages(run), expired]);
    } catch (error) {
      const current = await repository.findOneByOrFail({ id: move.id });
      if (expiry.signal.aborted && !context.signal.aborted)
        throw new JobFailure(
          'warehouse_move_timed_out',
          `The move did not finish within ${deadlineMs} ms (at its ${current.stage} stage); ${
            beforeCutOver.includes(current.stage)
              ? 'the account stays on its source'
              : 'the account is on the target, its source schema is kept'
          }`,
        );
      if (context.signal.aborted || error instanceof JobFailure) throw error;
      const message = error instanceof Error ? error.message : String(error);
      if (beforeCutOver.includes(current.stage)) {
        const kind = source.classifyError(error);
        throw new JobFailure(
          'warehouse_move_failed',
          `The move stopped at its ${current.stage} stage (${kind}); the account stays on its source`,
          message,
        );
      }
      // After the cut-over the account is on the target: the drain and the retirement are tried again.
      throw new TransientJobError(
        'warehouse_move_interrupted',
        `The move's ${current.stage} stage failed and is tried again`,
        message,
      );
    } finally {
      clearTimeout(timer);
    }
  }

  /** Runs the move's stages from where it is until it is done or failed. */
  private async stages(run: MoveRun): Promise<JobCounts> {
    const { logger } = this.deps;
    const repository = this.deps.dataSource.getRepository(WarehouseMoveEntity);
    for (;;) {
      const move = (run.move = await repository.findOneByOrFail({ id: run.move.id }));
      run.context.signal.throwIfAborted();
      logger.info('warehouse move stage', { moveId: move.id, accountId: move.accountId, stage: move.stage });
      switch (move.stage) {
        case 'queued':
        case 'copy':
          await this.copyStage(run);
          break;
        case 'verify':
          await this.verifyStage(run);
          break;
        case 'cut_over':
          await this.cutOver(move);
          break;
        case 'drain':
          await this.drain(run);
          break;
        case 'retire':
          await run.source.dropAccount(run.account);
          await this.setStage(move.id, 'done', { finished_at: new Date() });
          logger.info('warehouse move done', { moveId: move.id, accountId: move.accountId });
          break;
        case 'done':
        case 'failed':
          return run.counts;
      }
    }
  }

  async onTransition(tx: EntityManager, job: JobEntity, transition: JobTransition): Promise<void> {
    if (transition.to !== 'failed' && transition.to !== 'cancelled') return;
    const move = await tx.getRepository(WarehouseMoveEntity).findOneBy({ jobId: job.id });
    if (!move || move.stage === 'done' || move.stage === 'failed') return;
    const error =
      transition.to === 'failed'
        ? transition.error
        : { code: 'warehouse_move_cancelled', message: 'The move was cancelled' };
    const { untargeted } = await endUnfinishedMove(tx, move, error);
    // Told before the commit: a consumer that asks at once may still see the target for one
    // cache time and write there too, which the source never misses.
    if (untargeted) await this.announce(move.accountId);
    this.deps.logger.warn('warehouse move failed', { moveId: move.id, stage: move.stage, ...error });
  }

  private async copyStage(run: MoveRun): Promise<void> {
    const { move, target, onTarget, context } = run;
    if (move.stage === 'queued') {
      try {
        await target.probe();
      } catch (error) {
        throw new JobFailure(
          'target_unavailable',
          `The target warehouse cannot be reached (${target.classifyError(error)}); the account stays on its source`,
          error instanceof Error ? error.message : String(error),
        );
      }
      await target.ensureAccount(onTarget);
      await this.deps.dataSource.transaction(async (tx) => {
        await tx.query(
          `UPDATE account_warehouses SET move_to_warehouse_id = $3
            WHERE account_id = $1 AND warehouse_id = $2`,
          [move.accountId, move.fromWarehouseId, move.toWarehouseId],
        );
        await tx.query(
          `UPDATE warehouse_moves SET stage = 'copy', targeted_at = COALESCE(targeted_at, now()), updated_at = now()
            WHERE id = $1`,
          [move.id],
        );
      });
      await this.announce(move.accountId);
      move.targetedAt = (
        await this.deps.dataSource.getRepository(WarehouseMoveEntity).findOneByOrFail({ id: move.id })
      ).targetedAt;
    }
    // Every consumer's cached answer without the target has expired: from here on each row
    // written to the source is written to the target as well.
    await waitUntil(
      (move.targetedAt?.getTime() ?? Date.now()) + this.deps.timings.consumerWaitMs,
      context.signal,
    );
    await this.copyAll(run, 'copy');
    await this.setStage(move.id, 'verify', { copy_attempts: move.copyAttempts + 1 });
  }

  private async verifyStage(run: MoveRun): Promise<void> {
    const { move } = run;
    const verification = await this.compare(run, 'verify');
    if (verification.ok) {
      await this.setStage(move.id, 'cut_over', { verification: JSON.stringify(verification) });
      return;
    }
    const days = missingDaysOf(verification);
    if (move.copyAttempts < MAX_COPY_ATTEMPTS) {
      this.deps.logger.warn('warehouse move: rows missing on the target, copying again', {
        moveId: move.id,
        days,
      });
      await this.setStage(move.id, 'copy', { verification: JSON.stringify(verification) });
      return;
    }
    await this.setStage(move.id, 'verify', { verification: JSON.stringify(verification) });
    throw new JobFailure(
      'warehouse_move_verify_failed',
      `Rows of the source are missing on the target after ${move.copyAttempts} copies (${days}); the account stays on its source`,
    );
  }

  private async cutOver(move: WarehouseMoveEntity): Promise<void> {
    await this.deps.dataSource.transaction(async (tx) => {
      // Only a placement still on the source moves: a cut-over run again changes nothing.
      await tx.query(
        `UPDATE account_warehouses
            SET warehouse_id = $3, schema = $4, epoch = epoch + 1, move_to_warehouse_id = NULL, placed_at = now()
          WHERE account_id = $1 AND warehouse_id = $2`,
        [move.accountId, move.fromWarehouseId, move.toWarehouseId, move.toSchema ?? move.schema],
      );
      await tx.query(
        `UPDATE warehouse_moves SET stage = 'drain', cut_over_at = COALESCE(cut_over_at, now()), updated_at = now()
          WHERE id = $1`,
        [move.id],
      );
    });
    await this.announce(move.accountId);
    this.deps.logger.info('warehouse move cut over', { moveId: move.id, accountId: move.accountId });
  }

  private async drain(run: MoveRun): Promise<void> {
    const { move, context } = run;
    await waitUntil((move.cutOverAt?.getTime() ?? Date.now()) + this.deps.timings.drainMs, context.signal);
    // What writers holding the old epoch put on the source after the copy lands on the target.
    let verification: MoveVerification | undefined;
    for (let attempt = 1; attempt <= MAX_COPY_ATTEMPTS; attempt += 1) {
      await this.copyAll(run, 'drain');
      verification = await this.compare(run, 'drain');
      if (verification.ok) break;
    }
    if (!verification?.ok) {
      await this.setStage(move.id, 'drain', { verification: JSON.stringify(verification) });
      throw new JobFailure(
        'warehouse_move_drain_failed',
        `Rows of the source are still missing on the target after the drain (${verification ? missingDaysOf(verification) : ''}); the account is on the target, its source schema is kept`,
      );
    }
    await this.setStage(move.id, 'retire', { verification: JSON.stringify(verification) });
  }

  /** Copies every table of the account from source to target, saving rows copied per batch. */
  private async copyAll(run: MoveRun, pass: keyof MoveProgress): Promise<void> {
    const { source, target, account, onTarget, counts, context } = run;
    const copied: Record<string, number> = {};
    for (const table of await source.accountTables(account)) {
      context.signal.throwIfAborted();
      const exported = await source.exportTable(account, table, { batchRows: this.deps.timings.batchRows });
      if (!exported) continue;
      copied[table] = 0;
      for await (const batch of exported.batches) {
        await target.importRows(onTarget, exported.shape, batch);
        copied[table] += batch.rows;
        counts.rowsRead += batch.rows;
        await context.progress(counts, async (tx) => {
          await tx.query(
            `UPDATE warehouse_moves SET progress = jsonb_set(progress, $2, $3::jsonb), updated_at = now() WHERE id = $1`,
            [run.move.id, [pass], JSON.stringify(copied)],
          );
        });
      }
    }
    await context.progress(counts, async (tx) => {
      await tx.query(
        `UPDATE warehouse_moves SET progress = jsonb_set(progress, $2, $3::jsonb), updated_at = now() WHERE id = $1`,
        [run.move.id, [pass], JSON.stringify(copied)],
      );
    });
  }

  /**
   * Per table and UTC day: equal counts and key hashes pass at once; a day that differs passes
   * when every key of the source is on the target (the target may hold more: rows written
   * there first, or after the cut-over). The keys missing at the first look are looked for
   * again after a moment, for rows in flight between the two writes; only those: an account
   * written to all the time always has a row on the source whose write to the target is under
   * way, so a day read afresh at each look would never pass. A row first written after the first
   * look is written to both (the writers hold the target since before the copy), and the drain
   * copies whatever the source still has after the cut-over.
   */
  private async compare(run: MoveRun, stage: MoveVerification['stage']): Promise<MoveVerification> {
    const { source, target, account, onTarget, context } = run;
    const attempts = this.deps.timings.verifyAttempts ?? 3;
    const retryMs = this.deps.timings.verifyRetryMs ?? 2000;
    const tables: Record<string, TableVerification> = {};
    for (const table of await source.accountTables(account)) {
      const sourceDays = await source.tableDays(account, table);
      const targetDays = new Map((await target.tableDays(onTarget, table)).map((d) => [d.day, d]));
      let missingDays: string[] = [];
      for (const day of sourceDays) {
        const other = targetDays.get(day.day);
        if (other && other.rows === day.rows && other.hash === day.hash) continue;
        missingDays.push(day.day);
      }
      let missing = new Map<string, string[]>();
      for (const day of missingDays) missing.set(day, await source.tableKeysOn(account, table, day));
      for (let attempt = 1; missing.size > 0; attempt += 1) {
        const still = new Map<string, string[]>();
        for (const [day, keys] of missing) {
          const present = new Set(await target.tableKeysOn(onTarget, table, day));
          const absent = keys.filter((key) => !present.has(key));
          if (absent.length > 0) still.set(day, absent);
        }
        missing = still;
        if (missing.size === 0 || attempt >= attempts) break;
        await waitUntil(Date.now() + retryMs, context.signal);
      }
      missingDays = [...missing.keys()];
      tables[table] = {
        sourceRows: sourceDays.reduce((sum, d) => sum + d.rows, 0),
        targetRows: [...targetDays.values()].reduce((sum, d) => sum + d.rows, 0),
        missingDays,
      };
    }
    const ok = Object.values(tables).every((t) => t.missingDays.length === 0);
    return { stage, at: new Date().toISOString(), ok, tables };
  }

  private async announce(accountId: string): Promise<void> {
    await this.deps.tenantChanges?.publish({ kind: 'tenant_changed', accountId });
  }

  private async setStage(id: string, stage: WarehouseMoveStage, extra: Record<string, unknown> = {}) {
    const columns = Object.keys(extra);
    const sets = columns.map((column, i) => `${column} = $${i + 3}`);
    await this.deps.dataSource.query(
      `UPDATE warehouse_moves SET stage = $2, updated_at = now()${sets.map((s) => `, ${s}`).join('')} WHERE id = $1`,
      [id, stage, ...columns.map((c) => extra[c])],
    );
  }
}

interface MoveRun {
  move: WarehouseMoveEntity;
  source: WarehouseEngine;
  target: WarehouseEngine;
  account: AccountLocation;
  /** The account on the target: the app's schema on the account's own server. */
  onTarget: AccountLocation;
  counts: JobCounts;
  context: JobContext;
}

function missingDaysOf(verification: MoveVerification): string {
  return Object.entries(verification.tables)
    .filter(([, t]) => t.missingDays.length > 0)
    .map(([table, t]) => `${table}: ${t.missingDays.join(', ')}`)
    .join('; ');
}
