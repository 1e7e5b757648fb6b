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
