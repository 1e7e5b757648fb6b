export {
  defaultRetryPolicy,
  retryDelayMs,
  reasonCategory,
  retryGroupFor,
  runConsumer,
  type ConsumerRunnerOptions,
  type DeliveryTopics,
  type RetryPolicy,
  type RunningConsumer,
} from './consumer-runner';
export {
  deliveryHeaders,
  headerText,
  retryTargetOf,
  type DeliveryMessage,
  DestinationUnavailable,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
} from './destination';
export {
  consumerGroupFor,
  createDestination,
  deliveryTopicsFor,
  destinationKinds,
  isDestinationKind,
  isForwardingKind,
  type DestinationDependencies,
  type DestinationKind,
} from './destination-kinds';
export { DeliveryMetrics, type LagSource } from './delivery-metrics';
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
export {
  defaultForwardingLimits,
  ForwardingDestination,
  type ForwardingLimits,
} from './forwarding/forwarding-destination';
export { LogDestination } from './log-destination';
export { TenantDirectory, type TenantDirectoryOptions } from './tenant-directory';
export { WarehouseWriter, type WriteResult } from './warehouse/warehouse-writer';
export { warehouseMigrations } from './warehouse/warehouse-ddl';
export { WarehouseDestination } from './warehouse/warehouse-destination';
export { StreamTableWriter, type StreamWriteResult } from './warehouse/stream-table-writer';
export {
  defaultWarehouseTimeouts,
  warehouseConfigSchema,
  warehouseTimeoutsOf,
  type WarehouseTimeouts,
} from './warehouse/warehouse-pool';
export { warehouseErrorKind, type WarehouseErrorKind } from './warehouse/warehouse-errors';
