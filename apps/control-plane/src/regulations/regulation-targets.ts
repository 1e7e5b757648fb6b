import { rolesOfAppType } from '@pipeline/catalog';
import type { DataSource } from 'typeorm';
import type { WarehousePlacements } from '../warehouse-registry/warehouse-placements';
import type { RegulationEffect, TargetKind } from './regulation-types';

export interface PlannedTarget {
  target: string;
  kind: TargetKind;
  name: string;
  appType: string | null;
}

/** The account's destinations: its live integrations whose app forwards events. */
export async function destinationsOf(
  dataSource: DataSource,
  accountId: string,
): Promise<{ integrationId: string; name: string; appType: string }[]> {
  const rows = (await dataSource.query(
    `SELECT i.id, a.display_name, a.app_type FROM integrations i
       JOIN apps a ON a.id = i.destination_app_id
      WHERE i.account_id = $1 AND i.state <> 'deleted' AND a.state <> 'deleted'
      ORDER BY i.created_at, i.id`,
    [accountId],
  )) as { id: string; display_name: string; app_type: string }[];
  return rows
    .filter((row) => rolesOfAppType(row.app_type).includes('destination'))
    .map((row) => ({ integrationId: row.id, name: row.display_name, appType: row.app_type }));
}

/** The account's warehouse: its id and its name (the engine's when the row has none). */
export async function accountWarehouseNamed(
  dataSource: DataSource,
  placements: Pick<WarehousePlacements, 'summaryOf'>,
  accountId: string,
): Promise<{ warehouseId: string; name: string }> {
  const warehouse = await placements.summaryOf(accountId);
  const [named] = (await dataSource.query('SELECT name FROM warehouses WHERE id = $1', [
    warehouse.warehouseId,
  ])) as { name: string }[];
  return { warehouseId: warehouse.warehouseId, name: named?.name ?? warehouse.engine };
}

/**
 * Where a deleting regulation erases: the account's warehouse (a move in progress erases on
 * both sides through the same engine), the dead-letter index, the debugger, and with `vendors`
 * each destination integration (whether it can delete is decided when its turn comes, so a
 * credential added meanwhile counts).
 */
export async function plannedTargets(
  dataSource: DataSource,
  placements: Pick<WarehousePlacements, 'summaryOf'>,
  accountId: string,
  effect: RegulationEffect,
): Promise<PlannedTarget[]> {
  if (!effect.deletes) return [];
  const warehouse = await accountWarehouseNamed(dataSource, placements, accountId);
  const targets: PlannedTarget[] = [
    { target: `warehouse:${warehouse.warehouseId}`, kind: 'warehouse', name: warehouse.name, appType: null },
    { target: 'dead_letters', kind: 'dead_letters', name: 'Dead-letter index', appType: null },
    { target: 'debugger', kind: 'debugger', name: 'Live debugger', appType: null },
  ];
  if (effect.vendors) {
    for (const destination of await destinationsOf(dataSource, accountId))
      targets.push({
        target: `integration:${destination.integrationId}`,
        kind: 'destination',
        name: destination.name,
        appType: destination.appType,
      });
  }
  return targets;
}
