export { runConsumer, type ConsumerRunnerOptions, type RunningConsumer } from './consumer-runner';
export type { DeliveryMessage, Destination } from './destination';
export {
  consumerGroupFor,
  destinationKinds,
  isDestinationKind,
  type DestinationDependencies,
  type DestinationKind,
} from './destination-kinds';
export { LogDestination } from './log-destination';
export { WarehouseWriter, type WriteResult } from './warehouse/warehouse-writer';
export { warehouseMigrations } from './warehouse/warehouse-ddl';
export { WarehouseDestination } from './warehouse/warehouse-destination';
