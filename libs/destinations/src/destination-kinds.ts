import type { Logger } from '@pipeline/logger';
import type { Destination } from './destination';
import { LogDestination } from './log-destination';
import { WarehouseDestination } from './warehouse/warehouse-destination';
import { WarehouseWriter } from './warehouse/warehouse-writer';

export interface DestinationDependencies {
  logger: Logger;
  /** The PostgreSQL warehouse (WAREHOUSE_URL). */
  warehouseUrl: string;
}

/** Every kind `delivery --destination <kind>` can run, each in its own consumer group. */
export const destinationKinds = {
  log: (deps: DestinationDependencies): Destination => new LogDestination(deps.logger),
  warehouse: (deps: DestinationDependencies): Destination =>
    new WarehouseDestination(new WarehouseWriter(deps.warehouseUrl), deps.logger),
} as const satisfies Record<string, (deps: DestinationDependencies) => Destination>;

export type DestinationKind = keyof typeof destinationKinds;

export function isDestinationKind(value: string): value is DestinationKind {
  return Object.hasOwn(destinationKinds, value);
}

export const consumerGroupFor = (kind: DestinationKind) => `delivery.${kind}`;
