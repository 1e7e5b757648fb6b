import type { DataSource, EntityManager } from 'typeorm';
import {
  warehouseSchemaFor,
  type WarehouseEngineName,
  type ResolvedWarehouse,
  type TenantChangePublisher,
  type WarehousePlacement,
} from '@pipeline/tenancy';
import type { Logger } from '@pipeline/logger';
import { badRequest, conflict, invalidField } from '../http/api-errors';
import { isUuid } from '../http/ids';
import {
  AccountWarehouseEntity,
  WarehouseEntity,
  type WarehouseOwner,
  type WarehouseStatus,
} from './warehouse.entity';
import {
  accountNotFound,
  noDefaultWarehouse,
  placeOnDefault,
  type WarehouseRegistry,
} from './warehouse-registry';

/**
 * Where an account's warehouse data lives, with the connection to reach it: what the warehouse
 * consumer asks over the internal endpoint, and what the control plane's own readers ask in
 * process. An account that has no placement yet (created while there was no default) is placed
 * on the default at its first resolution.
 */
export class WarehousePlacements {
  constructor(
    private readonly dataSource: DataSource,
    private readonly registry: WarehouseRegistry,
    private readonly tenantChanges?: TenantChangePublisher,
    private readonly logger?: Logger,
  ) {}

  /** The placement only, without the connection: what the tenant record and the API carry. */
  async placementOf(accountId: string): Promise<WarehousePlacement & { status: WarehouseStatus }> {
    const { placement, warehouse } = await this.placed(accountId);
    return { ...placementView(placement, warehouse), status: warehouse.status };
  }

  /** The account's warehouse as the account sees it, placing it on the default if it is not yet. */
  async summaryOf(accountId: string): Promise<AccountWarehouseSummary> {
    const placed = await accountWarehouseOf(this.dataSource, accountId);
    if (placed) return placed;
    await this.placedEntity(accountId);
    const now = await accountWarehouseOf(this.dataSource, accountId);
    if (!now) throw new Error(`account ${accountId} has no placement right after placing it`);
    return now;
  }

  /** The placement and the connection with its password opened; 404 account_not_found. */
  /**
   * While a move copies the account, `alsoWriteTo` names its target: the same schema and epoch
   * on the other warehouse, which writers fill as well.
   */
  async resolve(accountId: string): Promise<ResolvedWarehouse> {
    const { placement, warehouse } = await this.placed(accountId);
    const resolved: ResolvedWarehouse = {
      placement: placementView(placement, warehouse),
      connection: this.registry.connectionOf(warehouse),
    };
    if (placement.moveToWarehouseId) {
      const target = await this.dataSource
        .getRepository(WarehouseEntity)
        .findOneByOrFail({ id: placement.moveToWarehouseId });
      resolved.alsoWriteTo = {
        placement: placementView(
          // On the account's own server the app's schema; elsewhere the same name.
          { ...placement, warehouseId: target.id, schema: target.schema ?? placement.schema },
          target,
        ),
        connection: this.registry.connectionOf(target),
      };
    }
    return resolved;
  }

  /**
   * Places an account on a warehouse at once, with the schema that warehouse gives it, and
   * bumps the epoch. It copies nothing: for an account whose data is elsewhere the online move
   * is the way, which ends with this. A customer's warehouse takes only its own account (409
   * warehouse_of_another_account).
   */
  async place(accountId: string, warehouseIdOrName: string): Promise<WarehousePlacement> {
    if (!isUuid(accountId)) throw accountNotFound(accountId);
    const id = accountId.toLowerCase();
    const target = await this.registry.find(warehouseIdOrName);
    const placement = await this.dataSource.transaction(async (manager) => {
      const warehouse = await lockedTarget(manager, target, warehouseIdOrName, id, accountId);
      const schema = placementSchemaFor({ schema: warehouse.schema }, id);
      // A move in progress owns the placement: its cut-over is the one that changes it.
      const [placed] = (await manager.query(
        `INSERT INTO account_warehouses (account_id, warehouse_id, schema)
         VALUES ($1, $2, $3)
         ON CONFLICT (account_id) DO UPDATE
           SET warehouse_id = EXCLUDED.warehouse_id, schema = EXCLUDED.schema,
               epoch = account_warehouses.epoch + 1, placed_at = now()
           WHERE account_warehouses.move_to_warehouse_id IS NULL
         RETURNING epoch`,
        [id, warehouse.id, schema],
      )) as { epoch: number }[];
      if (!placed)
        throw conflict('warehouse_move_in_progress', 'The account is moving: one placement change at a time');
      return { warehouseId: warehouse.id, engine: target.engine, schema, epoch: placed.epoch };
    });
    await this.tenantChanges?.publish({ kind: 'tenant_changed', accountId: id });
    return placement;
  }

  /**
   * Re-places an account on another warehouse without copying anything: the way off a
   * warehouse that is gone for good, where an online move cannot read the source. The account's
   * tables on the old warehouse stay there, untouched and no longer read or written; from the
   * broadcast on, its events load into `warehouseIdOrName`, held ones included. The caller must
   * say so (`abandonData: true`): 400 abandon_data_required otherwise. Also 400
   * validation_failed, 404 account_not_found / warehouse_not_found, 409 already_on_warehouse,
   * warehouse_of_another_account, and warehouse_move_in_progress while a move of the account is
   * active (it fails by itself when its source is lost; the operator waits for that rather
   * than have two actors change one placement).
   */
  async placeAbandoningData(
    warehouseIdOrName: string,
    input: { accountId?: unknown; abandonData?: unknown },
  ): Promise<AbandonedPlacement> {
    if (typeof input.accountId !== 'string' || !isUuid(input.accountId))
      throw invalidField('body.accountId', "an account's id (a UUID)");
    if (input.abandonData !== true)
      throw badRequest(
        'abandon_data_required',
        'Re-placing copies nothing: the account\'s data on its current warehouse is left behind. Send "abandonData": true (CLI: --abandon-data) to do it, or start a move (POST /api/v1/operator/warehouse-moves) to copy it',
      );
    const id = input.accountId.toLowerCase();
    const target = await this.registry.find(warehouseIdOrName);
    const result = await this.dataSource.transaction(async (manager) => {
      const warehouse = await lockedTarget(manager, target, warehouseIdOrName, id, input.accountId as string);
      // The placement row first: a move's start locks it too (FOR SHARE) before its insert, so
      // either that move is seen below or it finds the account re-placed and is refused.
      const [current] = (await manager.query(
        'SELECT warehouse_id, schema FROM account_warehouses WHERE account_id = $1 FOR UPDATE',
        [id],
      )) as { warehouse_id: string; schema: string }[];
      const [move] = (await manager.query(
        "SELECT id, stage FROM warehouse_moves WHERE account_id = $1 AND stage NOT IN ('done', 'failed')",
        [id],
      )) as { id: string; stage: string }[];
      if (move)
        throw conflict(
          'warehouse_move_in_progress',
          `Move ${move.id} of the account is at its ${move.stage} stage: wait for it to end (it fails by itself when its source cannot be read), then re-place`,
        );
      if (current?.warehouse_id === warehouse.id)
        throw conflict('already_on_warehouse', `The account is on warehouse ${target.name} already`);
      const schema = placementSchemaFor({ schema: warehouse.schema }, id);
      const [placed] = (await manager.query(
        `INSERT INTO account_warehouses (account_id, warehouse_id, schema)
         VALUES ($1, $2, $3)
         ON CONFLICT (account_id) DO UPDATE
           SET warehouse_id = EXCLUDED.warehouse_id, schema = EXCLUDED.schema,
               epoch = account_warehouses.epoch + 1, move_to_warehouse_id = NULL, placed_at = now()
         RETURNING epoch`,
        [id, warehouse.id, schema],
      )) as { epoch: number }[];
      if (!placed) throw new Error(`account ${id} was not placed`);
      return {
        accountId: id,
        warehouseId: warehouse.id,
        engine: target.engine,
        schema,
        epoch: placed.epoch,
        abandoned: current ? { warehouseId: current.warehouse_id, schema: current.schema } : null,
      };
    });
    // The consumers drop their cached placement now and resolve the new one (epoch + 1), as at
    // a move's cut-over; without Redis they do within their cache time.
    await this.tenantChanges?.publish({ kind: 'tenant_changed', accountId: id });
    this.logger?.warn('account re-placed without its data', {
      accountId: id,
      toWarehouseId: result.warehouseId,
      epoch: result.epoch,
      abandonedWarehouseId: result.abandoned?.warehouseId ?? null,
      abandonedSchema: result.abandoned?.schema ?? null,
    });
    return result;
  }

  private async placed(
    accountId: string,
  ): Promise<{ placement: AccountWarehouseEntity; warehouse: WarehouseEntity }> {
    const placement = await this.placedEntity(accountId);
    const warehouse = await this.dataSource
      .getRepository(WarehouseEntity)
      .findOneByOrFail({ id: placement.warehouseId });
    return { placement, warehouse };
  }

  private async placedEntity(accountId: string): Promise<AccountWarehouseEntity> {
    if (!isUuid(accountId)) throw accountNotFound(accountId);
    const id = accountId.toLowerCase();
    const repository = this.dataSource.getRepository(AccountWarehouseEntity);
    const placed = await repository.findOneBy({ accountId: id });
    if (placed) return placed;
    const [account] = (await this.dataSource.query('SELECT 1 FROM accounts WHERE id = $1', [
      id,
    ])) as unknown[];
    if (!account) throw accountNotFound(accountId);
    const warehouseId = await this.dataSource.transaction((manager) => placeOnDefault(manager, id));
    if (!warehouseId) throw noDefaultWarehouse();
    await this.tenantChanges?.publish({ kind: 'tenant_changed', accountId: id });
    return repository.findOneByOrFail({ accountId: id });
  }
}

/** A re-placement without copying: where the account is now, and what it left behind. */
export interface AbandonedPlacement {
  accountId: string;
  warehouseId: string;
  engine: WarehouseEngineName;
  schema: string;
  epoch: number;
  /** The warehouse and schema its tables stay on, unread; null when it had no placement. */
  abandoned: { warehouseId: string; schema: string } | null;
}

interface WarehouseRowForPlacement {
  id: string;
  owner: 'platform' | 'customer';
  account_id: string | null;
  schema: string | null;
}

export const warehouseOfAnotherAccount = (name: string) =>
  conflict('warehouse_of_another_account', `Warehouse ${name} is another account's own server`);

/**
 * The target of a placement change, locked FOR SHARE in the caller's transaction: the app's
 * edit or deletion, and the entry's deletion (which lock the row for update), wait, so the
 * placement never lands on a row that just lost its schema or its existence. 409
 * warehouse_removed, warehouse_of_another_account; 404 account_not_found (`accountText` as the
 * caller gave it).
 */
async function lockedTarget(
  manager: EntityManager,
  target: WarehouseEntity,
  warehouseIdOrName: string,
  accountId: string,
  accountText: string,
): Promise<Pick<WarehouseRowForPlacement, 'id' | 'owner' | 'account_id' | 'schema'>> {
  const [warehouse] = (await manager.query(
    'SELECT id, owner, account_id, schema FROM warehouses WHERE id = $1 FOR SHARE',
    [target.id],
  )) as Pick<WarehouseRowForPlacement, 'id' | 'owner' | 'account_id' | 'schema'>[];
  if (!warehouse) throw conflict('warehouse_removed', `Warehouse ${warehouseIdOrName} was just removed`);
  if (warehouse.owner === 'customer' && warehouse.account_id !== accountId)
    throw warehouseOfAnotherAccount(target.name);
  const [account] = (await manager.query('SELECT 1 FROM accounts WHERE id = $1', [accountId])) as unknown[];
  if (!account) throw accountNotFound(accountText);
  return warehouse;
}

/**
 * The schema an account's tables have on a warehouse: the one a customer chose for their own
 * server (the app's `schema`), else the account's own `account_<id>` on a shared server.
 */
export const placementSchemaFor = (warehouse: { schema: string | null }, accountId: string): string =>
  warehouse.schema ?? warehouseSchemaFor(accountId);

function placementView(entity: AccountWarehouseEntity, warehouse: WarehouseEntity): WarehousePlacement {
  return {
    warehouseId: entity.warehouseId,
    engine: warehouse.engine,
    schema: entity.schema,
    epoch: entity.epoch,
  };
}

/** What the account-facing API shows of an account's warehouse: where, and how it is doing. */
export interface AccountWarehouseSummary {
  warehouseId: string;
  owner: WarehouseOwner;
  engine: WarehouseEngineName;
  schema: string;
  epoch: number;
  status: WarehouseStatus;
  statusDetail: string | null;
  statusChangedAt: Date;
  /** The account's postgres_warehouse app, for its own server; null on the platform's. */
  appId: string | null;
}

/** The account's placement and its warehouse's status; null while it is not placed yet. */
export async function accountWarehouseOf(
  dataSource: DataSource,
  accountId: string,
): Promise<AccountWarehouseSummary | null> {
  const rows = (await dataSource.query(
    `SELECT p.warehouse_id, p.schema, p.epoch, w.owner, w.engine, w.status, w.status_detail,
            w.status_changed_at, w.app_id
       FROM account_warehouses p JOIN warehouses w ON w.id = p.warehouse_id
      WHERE p.account_id = $1`,
    [accountId],
  )) as {
    warehouse_id: string;
    schema: string;
    epoch: number;
    owner: WarehouseOwner;
    engine: WarehouseEngineName;
    status: WarehouseStatus;
    status_detail: string | null;
    status_changed_at: Date;
    app_id: string | null;
  }[];
  const row = rows[0];
  return row
    ? {
        warehouseId: row.warehouse_id,
        owner: row.owner,
        engine: row.engine,
        schema: row.schema,
        epoch: row.epoch,
        status: row.status,
        statusDetail: row.status_detail,
        statusChangedAt: row.status_changed_at,
        appId: row.app_id,
      }
    : null;
}
