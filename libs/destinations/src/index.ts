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
  isForwardingKind,
  type DestinationDependencies,
  type DestinationKind,
} from './destination-kinds';
export { DeliveryMetrics, type LagSource } from './delivery-metrics';
export { DeliveryFailure, type SkippedEvent, type UndeliveredEvent } from './forwarding/delivery-failure';
export {
  vendorClientOptions,
  type Forwarder,
  type ForwarderOptions,
  type OutboundEvent,
  type SendOutcome,
  type VendorClientOptions,
} from './forwarding/forwarder';
// The vendor clients; the app catalog (@pipeline/catalog) says which app type each serves.
export { AmplitudeForwarder } from './forwarding/amplitude-forwarder';
export { BrazeForwarder } from './forwarding/braze-forwarder';
export { CustomerIoForwarder } from './forwarding/customer-io-forwarder';
export { GoogleAdsForwarder } from './forwarding/google-ads-forwarder';
export { HubSpotForwarder } from './forwarding/hubspot-forwarder';
export { MetaConversionsForwarder } from './forwarding/meta-conversions-forwarder';
export { MixpanelForwarder } from './forwarding/mixpanel-forwarder';
export { OneSignalForwarder } from './forwarding/onesignal-forwarder';
export { SegmentForwarder } from './forwarding/segment-forwarder';
export { WebhookForwarder } from './forwarding/webhook-forwarder';
export {
  DEFAULT_TOLERANCE_SECONDS,
  signWebhookBody,
  verifyWebhookSignature,
  webhookHeaders,
  type WebhookVerification,
} from './forwarding/webhook-signature';
export {
  defaultForwardingLimits,
  ForwardingDestination,
  type ForwardingLimits,
} from './forwarding/forwarding-destination';
export { LogDestination } from './log-destination';
export { TenantDirectory, type TenantDirectoryOptions } from './tenant-directory';
export { defaultRowsPerCopy, WarehouseWriter, type WriteResult } from './warehouse/warehouse-writer';
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
export {
  recordOutcome,
  type DeliveryOutcomeEntry,
  type DeliveryOutcomeKind,
  type OutcomeRecorder,
} from './outcome-recorder';
