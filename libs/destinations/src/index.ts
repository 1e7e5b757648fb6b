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
  type WarehouseHealth,
} from './destination';
export {
  consumerGroupFor,
  createDestination,
  DEAD_LETTER_RETENTION_MS,
  deliveryTopicsFor,
  isForwardingKind,
  type DestinationDependencies,
  type DestinationKind,
} from './destination-kinds';
export {
  deadLetterOf,
  deadLetterReasonCode,
  deadLetterReplayMessages,
  replayDeadLetters,
  replaySends,
  REPLAY_SEND_BYTES,
  type DeadLetter,
  type DeadLetterRecord,
  type ReplayableLetter,
  type ReplayProducer,
} from './dead-letters';
export { DeliveryMetrics, type LagSource } from './delivery-metrics';
export { withoutRegulatedEvents, type RegulatedBatch, type RegulationSource } from './regulation-filter';
export { DeliveryFailure, type SkippedEvent, type UndeliveredEvent } from './forwarding/delivery-failure';
export {
  vendorClientOptions,
  type Forwarder,
  type ForwarderOptions,
  type OutboundEvent,
  type SendOutcome,
  type VendorClientOptions,
} from './forwarding/forwarder';
export {
  deletionFailureCodes,
  type DeletionBatch,
  type DeletionBatchOutcome,
  type DeletionIdKind,
  type DeletionPollOutcome,
  type DeletionSubjects,
  type SubjectDeletionClient,
} from './forwarding/subject-deletion';
// The vendor clients; the app catalog (@pipeline/catalog) says which app type each serves.
export { AmplitudeForwarder } from './forwarding/vendors/amplitude/amplitude-forwarder';
export { BrazeForwarder } from './forwarding/vendors/braze/braze-forwarder';
export { CustomerIoForwarder } from './forwarding/vendors/customer-io/customer-io-forwarder';
export { GoogleAdsForwarder } from './forwarding/vendors/google-ads/google-ads-forwarder';
export { HubSpotForwarder } from './forwarding/vendors/hubspot/hubspot-forwarder';
export { MetaConversionsForwarder } from './forwarding/vendors/meta-conversions/meta-conversions-forwarder';
export { MixpanelForwarder } from './forwarding/vendors/mixpanel/mixpanel-forwarder';
export { OneSignalForwarder } from './forwarding/vendors/onesignal/onesignal-forwarder';
export { SegmentForwarder } from './forwarding/vendors/segment/segment-forwarder';
export { WebhookForwarder } from './forwarding/vendors/webhook/webhook-forwarder';
// Their deletion clients, for privacy regulations: vendors with a user deletion API only.
export { AmplitudeDeletionClient } from './forwarding/vendors/amplitude/amplitude-deletion';
export { BrazeDeletionClient } from './forwarding/vendors/braze/braze-deletion';
export { CustomerIoDeletionClient } from './forwarding/vendors/customer-io/customer-io-deletion';
export { HubSpotDeletionClient } from './forwarding/vendors/hubspot/hubspot-deletion';
export { MixpanelDeletionClient } from './forwarding/vendors/mixpanel/mixpanel-deletion';
export { OneSignalDeletionClient } from './forwarding/vendors/onesignal/onesignal-deletion';
export {
  WebhookDeletionClient,
  type WebhookDeleteMessage,
} from './forwarding/vendors/webhook/webhook-deletion';
export {
  DEFAULT_TOLERANCE_SECONDS,
  signedWebhookHeaders,
  signWebhookBody,
  verifyWebhookSignature,
  webhookHeaders,
  type WebhookVerification,
} from './forwarding/vendors/webhook/webhook-signature';
export {
  callVendor,
  failureOfStatus,
  isRequestFailure,
  type RequestFailure,
  type VendorHttp,
  type VendorRequest,
  type VendorResponse,
} from './forwarding/vendor-request';
export {
  defaultForwardingLimits,
  ForwardingDestination,
  type ForwardingLimits,
} from './forwarding/forwarding-destination';
export { LogDestination } from './log-destination';
export { TenantDirectory, type TenantDirectoryOptions } from './tenant-directory';
export { defaultRowsPerCopy, WarehouseWriter } from './warehouse/postgres/warehouse-writer';
export type {
  AccountLocation,
  ChangedRow,
  ChangeRequest,
  ChangeWatermark,
  ReadOnlyQueries,
  ReadOnlyQueryName,
  TrafficWindow,
  ReadOptions,
  ReadPurpose,
  RowBatch,
  StreamWriteResult,
  SubjectErasure,
  SubjectIds,
  SubjectRowCounts,
  TableDay,
  TableExport,
  TableShape,
  WarehouseEngine,
  WarehouseErrorClass,
  WarehouseTableName,
  WriteOrigin,
  WriteResult,
} from './warehouse/warehouse-engine';
export { warehouseMigrations } from './warehouse/postgres/warehouse-ddl';
export { MAX_STORAGE_BYTES, saneStorageBytes } from './warehouse/storage-bytes';
export { ClickHouseEngine, type ClickHouseEngineOptions } from './warehouse/clickhouse/clickhouse-engine';
export {
  directClickHouseClient,
  guardedClickHouseClients,
  type ClickHouseClientFactory,
  type ClickHouseClientSettings,
} from './warehouse/clickhouse/clickhouse-server';
export { insertToken } from './warehouse/clickhouse/clickhouse-row-writer';
export { clickhouseErrorKind } from './warehouse/clickhouse/clickhouse-errors';
export { clickhouseMigrations } from './warehouse/clickhouse/clickhouse-ddl';
export {
  PostgresEngine,
  guardedWarehousePools,
  type PostgresEngineOptions,
  type WarehousePoolFactory,
  type WarehousePoolSettings,
  type WarehouseQueryMeter,
} from './warehouse/postgres/postgres-engine';
export {
  engineErrorKinds,
  openWarehouseEngine,
  WarehouseEngines,
  type OpenWarehouseEngine,
  type OpenWarehousePool,
  type WarehouseEngineSettings,
  type WarehouseEnginesOptions,
} from './warehouse/warehouse-engines';
export { poolCap, WarehouseConnectionBudgetExhausted } from './warehouse/warehouse-connection-budget';
export {
  WarehouseDestination,
  type ReportWarehouseStatus,
  type WarehouseDestinationOptions,
  type WarehouseEngineSource,
  type WarehouseLoader,
} from './warehouse/warehouse-destination';
export {
  ResolvingWarehouseDirectory,
  StaticWarehouseDirectory,
  warehouseConnectionFromUrl,
  warehouseUrlField,
  warehouseUrlSchemes,
  type ResolveWarehouse,
  type ResolvingDirectoryOptions,
  type WarehouseDirectory,
} from './warehouse/warehouse-directory';
export { controlPlaneWarehouseCalls } from './warehouse/control-plane-warehouses';
export {
  defaultBreakerTimings,
  WarehouseBreaker,
  type BreakerCause,
  type BreakerState,
  type BreakerTimings,
} from './warehouse/warehouse-breaker';
export { StreamTableWriter } from './warehouse/postgres/stream-table-writer';
export {
  defaultWarehouseTimeouts,
  clickhouseClusterPattern,
  clickhouseSettingsOf,
  warehouseConfigSchema,
  warehousePoolLimitsOf,
  warehouseTimeoutsOf,
  type WarehousePoolLimits,
  type WarehouseTimeouts,
} from './warehouse/warehouse-pool';
export { redactSecrets, warehouseErrorKind, type WarehouseErrorKind } from './warehouse/warehouse-errors';
export {
  recordOutcome,
  type DeliveryOutcomeEntry,
  type DeliveryOutcomeKind,
  type OutcomeRecorder,
} from './outcome-recorder';
export {
  PLAN_QUARANTINED,
  planDecision,
  planViolationsColumn,
  quarantineReason,
  type PlanViolationsColumn,
} from './plan-decisions';
export {
  defaultFunctionBreaker,
  FunctionStep,
  functionLabel,
  type FunctionBreakerOptions,
  type FunctionStepCounters,
  type StepResult,
} from './functions/function-step';
