import type { DataSource } from 'typeorm';
import type { ResolvedWarehouse, TenantChangePublisher, WarehousePlacement } from '@pipeline/tenancy';
import { isUuid } from '../http/ids';
import { AccountWarehouseEntity, WarehouseEntity, type WarehouseStatus } from './warehouse.entity';
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
  ) {}

  /** The placement only, without the connection: what the tenant record and the API carry. */
  async placementOf(accountId: string): Promise<WarehousePlacement & { status: WarehouseStatus }> {
    const { placement, warehouse } = await this.placed(accountId);
    return { ...placementView(placement, warehouse), status: warehouse.status };
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
        placement: placementView({ ...placement, warehouseId: target.id }, target),
        connection: this.registry.connectionOf(target),
      };
    }
    return resolved;
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
  schema: string;
  status: WarehouseStatus;
}

/** The account's placement and its warehouse's status; null while it is not placed yet. */
export async function accountWarehouseOf(
  dataSource: DataSource,
  accountId: string,
): Promise<AccountWarehouseSummary | null> {
  const rows = (await dataSource.query(
    `SELECT p.warehouse_id, p.schema, w.status
       FROM account_warehouses p JOIN warehouses w ON w.id = p.warehouse_id
      WHERE p.account_id = $1`,
    [accountId],
  )) as { warehouse_id: string; schema: string; status: WarehouseStatus }[];
  const row = rows[0];
  return row ? { warehouseId: row.warehouse_id, schema: row.schema, status: row.status } : null;
}
