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
export {
  DeliveryFailure,
  forwarderFor,
  forwardingAppTypes,
  type Forwarder,
  type ForwarderOptions,
  type OutboundEvent,
  type SendOutcome,
  type SkippedEvent,
  type UndeliveredEvent,
} from './forwarding/forwarder';
export {
  DEFAULT_TOLERANCE_SECONDS,
  signWebhookBody,
  verifyWebhookSignature,
  webhookHeaders,
  type WebhookVerification,
} from './forwarding/webhook-signature';
export {
  lookAlikeCredentials,
  lookAlikeDestination,
  startLookAlikeVendor,
  type AcceptedItem,
  type LookAlikeServer,
  type LookAlikeVendor,
  type RecordedRequest,
  type ScriptedAnswer,
} from './forwarding/testing/vendor-server';
