import type { DataSource, EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import { badRequest, conflict } from '../http/api-errors';
import { isUuid } from '../http/ids';
import { returnedRows } from '../database/returned-rows';
import type { WarehouseMoveView } from './warehouse.dto';
import { WarehouseMoveEntity, type WarehouseMoveStage } from './warehouse-move.entity';
import {
  placementSchemaFor,
  warehouseOfAnotherAccount,
  type WarehousePlacements,
} from './warehouse-placements';
import type { WarehouseRegistry } from './warehouse-registry';

export const moveNotFound = (id: string) =>
  new AppError(404, 'warehouse_move_not_found', `No warehouse move ${id}`);

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

/** Stages before the cut-over: the account is still on its source. */
export const beforeCutOver: readonly WarehouseMoveStage[] = ['queued', 'copy', 'verify', 'cut_over'];

/**
 * Ends a move that did not finish (failed, cancelled, out of time), in the caller's
 * transaction. Before the cut-over the move target is cleared, so writers go back to the
 * source alone, and the account stays there; after it the account stays on the target and the
 * source's schema is kept (never retired). Returns whether writers must be told.
 */
export async function endUnfinishedMove(
  tx: EntityManager,
  move: WarehouseMoveEntity,
  error: { code: string; message: string },
): Promise<{ untargeted: boolean }> {
  const untargeted = beforeCutOver.includes(move.stage);
  if (untargeted)
    await tx.query(
      `UPDATE account_warehouses SET move_to_warehouse_id = NULL
        WHERE account_id = $1 AND move_to_warehouse_id = $2`,
      [move.accountId, move.toWarehouseId],
    );
  await tx.query(
    `UPDATE warehouse_moves SET stage = 'failed', error = $2, finished_at = now(), updated_at = now() WHERE id = $1`,
    [move.id, JSON.stringify(error)],
  );
  return { untargeted };
}

export function moveViewOf(move: WarehouseMoveEntity): WarehouseMoveView {
  return {
    id: move.id,
    accountId: move.accountId,
    fromWarehouseId: move.fromWarehouseId,
    toWarehouseId: move.toWarehouseId,
    schema: move.schema,
    toSchema: move.toSchema,
    stage: move.stage,
    jobId: move.jobId,
    progress: move.progress,
    verification: move.verification,
    copyAttempts: move.copyAttempts,
    error: move.error,
    createdAt: move.createdAt.toISOString(),
    updatedAt: move.updatedAt.toISOString(),
    cutOverAt: move.cutOverAt?.toISOString() ?? null,
    finishedAt: move.finishedAt?.toISOString() ?? null,
  };
}

/**
 * Starts and shows moves of accounts between platform warehouses. A move is a job of the job
 * runner (kind `warehouse_move`, WarehouseMoveExecutor), so a control plane that restarts
 * resumes it at its stage.
 */
export interface WarehouseMovesOptions {
  onJobQueued?: () => void;
  /** Stops a cancelled move's job at once when it runs in this process. */
  onJobCancelled?: (jobId: string) => void;
  /** Tells writers a cancelled move's target is gone. */
  tenantChanges?: TenantChangePublisher;
}

export class WarehouseMoves {
  constructor(
    private readonly dataSource: DataSource,
    private readonly registry: WarehouseRegistry,
    private readonly placements: WarehousePlacements,
    private readonly options: WarehouseMovesOptions = {},
  ) {}

  /**
   * 400 validation_failed, 404 account_not_found / warehouse_not_found, 409
   * warehouse_not_platform (the account is on a customer's warehouse),
   * warehouse_of_another_account (the target is another account's own server), already_on_warehouse,
   * warehouse_move_in_progress (one active move per account), warehouse_placement_changed (the
   * account was re-placed while the move started), warehouse_removed. The engines may differ: every
   * engine exports and imports PostgreSQL's COPY text (docs/warehouses.md, "Between PostgreSQL
   * and ClickHouse").
   */
  async start(input: { accountId: unknown; toWarehouse: unknown }): Promise<WarehouseMoveView> {
    const problems: { path: string; message: string }[] = [];
    if (typeof input.accountId !== 'string' || !isUuid(input.accountId))
      problems.push({ path: 'body.accountId', message: "an account's id (a UUID)" });
    if (typeof input.toWarehouse !== 'string' || input.toWarehouse.length === 0)
      problems.push({ path: 'body.toWarehouse', message: "the target warehouse's id or name" });
    if (problems.length > 0) throw badRequest('validation_failed', 'The request is not valid', problems);
    const accountId = (input.accountId as string).toLowerCase();
    const placement = await this.placements.placementOf(accountId);
    const target = await this.registry.find(input.toWarehouse as string);
    const source = await this.registry.find(placement.warehouseId);
    // An account moves from a platform warehouse, to another or onto its own server; never off
    // a customer's server (its retirement would drop the customer's schema).
    if (source.owner !== 'platform')
      throw conflict(
        'warehouse_not_platform',
        "Only accounts on a platform warehouse move: a customer's warehouse is theirs",
      );
    if (target.owner === 'customer' && target.accountId !== accountId)
      throw warehouseOfAnotherAccount(target.name);
    const toSchema = placementSchemaFor(target, accountId);
    if (target.id === source.id)
      throw conflict('already_on_warehouse', `The account is on warehouse ${target.name} already`);
    let id: string;
    try {
      id = await this.dataSource.transaction(async (tx) => {
        // Still on the source: a placement changed meanwhile (an operator's re-placement, which
        // locks this row too) would leave the move copying from where the account is not.
        const [still] = (await tx.query(
          'SELECT 1 FROM account_warehouses WHERE account_id = $1 AND warehouse_id = $2 FOR SHARE',
          [accountId, source.id],
        )) as unknown[];
        if (!still)
          throw conflict(
            'warehouse_placement_changed',
            'The account was placed on another warehouse meanwhile: start the move again',
          );
        const [job] = returnedRows<{ id: string }>(
          await tx.query(
            `INSERT INTO jobs (account_id, kind, trigger, status) VALUES ($1, 'warehouse_move', 'manual', 'queued')
           RETURNING id`,
            [accountId],
          ),
        );
        if (!job) throw new Error('the move job was not inserted');
        const [move] = returnedRows<{ id: string }>(
          await tx.query(
            `INSERT INTO warehouse_moves (account_id, from_warehouse_id, to_warehouse_id, schema, to_schema, job_id, stage)
           VALUES ($1, $2, $3, $4, $5, $6, 'queued') RETURNING id`,
            [
              accountId,
              source.id,
              target.id,
              placement.schema,
              toSchema === placement.schema ? null : toSchema,
              job.id,
            ],
          ),
        );
        if (!move) throw new Error('the move was not inserted');
        return move.id;
      });
    } catch (error) {
      const driver = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
      if (driver?.code === UNIQUE_VIOLATION && driver.constraint === 'warehouse_moves_one_active')
        throw conflict('warehouse_move_in_progress', 'The account is moving already: one move at a time');
      // The target's entry was deleted between its lookup and the move's insert.
      if (driver?.code === FOREIGN_KEY_VIOLATION)
        throw conflict('warehouse_removed', `Warehouse ${String(input.toWarehouse)} was just removed`);
      throw error;
    }
    this.options.onJobQueued?.();
    return this.get(id);
  }

  /**
   * Cancels a move that has not finished, whatever its stage: its job is cancelled (the
   * worker's slot is freed at once in this process, at its next heartbeat elsewhere) and the
   * move ends as `failed` with `warehouse_move_cancelled`. Before the cut-over the account stays
   * on its source and writers stop writing to the target; after it the account stays on the
   * target and the source's schema is kept. 404 warehouse_move_not_found, 409
   * warehouse_move_finished.
   */
  async cancel(id: string): Promise<WarehouseMoveView> {
    if (!isUuid(id)) throw moveNotFound(id);
    const moveId = id.toLowerCase();
    const { move, untargeted } = await this.dataSource.transaction(async (tx) => {
      const found = await tx
        .getRepository(WarehouseMoveEntity)
        .findOne({ where: { id: moveId }, lock: { mode: 'pessimistic_write' } });
      if (!found) throw moveNotFound(id);
      if (found.stage === 'done' || found.stage === 'failed')
        throw conflict('warehouse_move_finished', `Move ${found.id} is ${found.stage} already`);
      if (found.jobId)
        await tx.query(
          `UPDATE jobs SET status = 'cancelled', worker_id = NULL, heartbeat_at = NULL,
                  finished_at = now(), updated_at = now(),
                  error = jsonb_build_object('code', 'cancelled', 'message', 'Cancelled by the operator')
            WHERE id = $1 AND status IN ('queued', 'running')`,
          [found.jobId],
        );
      const ended = await endUnfinishedMove(tx, found, {
        code: 'warehouse_move_cancelled',
        message: 'The move was cancelled by the operator',
      });
      return { move: found, ...ended };
    });
    if (move.jobId) this.options.onJobCancelled?.(move.jobId);
    if (untargeted)
      await this.options.tenantChanges?.publish({ kind: 'tenant_changed', accountId: move.accountId });
    return this.get(move.id);
  }

  async get(id: string): Promise<WarehouseMoveView> {
    if (!isUuid(id)) throw moveNotFound(id);
    const move = await this.dataSource.getRepository(WarehouseMoveEntity).findOneBy({ id: id.toLowerCase() });
    if (!move) throw moveNotFound(id);
    return moveViewOf(move);
  }

  /** The newest moves first (at most `limit`). */
  async list(limit = 100): Promise<WarehouseMoveView[]> {
    const moves = await this.dataSource
      .getRepository(WarehouseMoveEntity)
      .find({ order: { createdAt: 'DESC', id: 'ASC' }, take: limit });
    return moves.map(moveViewOf);
  }
}
