export { originAllowed } from './origin-match';
export { addressLimitKey, clientAddressResolver, UNPARSED_ADDRESS_KEY } from './client-address';
export type { BoundFunction } from './bound-function';
export type {
  DestinationKind,
  DestinationSummary,
  ResolvedDestination,
  TenantRecord,
  TenantWarehouse,
  TrackingPlanBinding,
  WriteKeyRecord,
} from './tenant-record';
export { isPlausibleWriteKey, MAX_WRITE_KEY_LENGTH } from './tenant-record';
export {
  warehouseEngines,
  warehouseSchemaFor,
  warehouseTlsModes,
  type ResolvedWarehouse,
  type WarehouseConnection,
  type WarehouseEngineName,
  type WarehousePlacement,
  type WarehouseTlsMode,
} from './warehouse-location';
export {
  ControlPlaneClient,
  ControlPlaneUnavailable,
  TrackingPlanVersionNotFound,
  WarehouseQuestionRefused,
  type ReportedWarehouseStatus,
  type TrackingPlanVersionRecord,
} from './control-plane-client';
export { TenantChangePublisher, TenantChangeSubscriber } from './tenant-changes';
export { TENANT_CHANGES_CHANNEL, type TenantChange, type TenantChangeEvent } from './tenant-change-message';
export { UNSUBSCRIBED_MAX_TTL_MS, usableCacheEntry } from './cache-freshness';
export { TenantCache, type CachedTenant, type TenantCacheOptions } from './tenant-cache';
export {
  DAY_WINDOW_TTL_SECONDS,
  INGESTION_KEY_PREFIX,
  SECOND_WINDOW_TTL_SECONDS,
  writeKeyHashTag,
  writeKeyWindowKeys,
} from './write-key-windows';
export {
  RegulatedSubjects,
  subjectHash,
  SubjectHasher,
  subjectTypes,
  type EventIdentity,
  type RegulatedSubject,
  type RegulatedSubjectsRecord,
  type RegulatedSubjectList,
  subjectColumns,
  SUBJECT_HASH_LENGTH,
  type RegulationDecision,
  type SubjectType,
} from './regulated-subjects';
export { decideEach } from './regulated-events';
export {
  REGULATED_SUBJECTS_TIMEOUT_MS,
  RegulatedSubjectsCache,
  type RegulatedSubjectsCacheOptions,
} from './regulated-subjects-cache';
export { TrackingPlanCache, type PlanLookup, type TrackingPlanCacheOptions } from './tracking-plan-cache';
