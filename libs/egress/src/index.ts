export { addressRefusal, parseAllowedRanges, type AllowedRange } from './address-policy';
export { egressConfigSchema, type EgressConfig } from './egress-config';
export {
  EgressRefused,
  guardedLookup,
  isEgressRefusal,
  literalRefusal,
  lookupOver,
} from './connection-guard';
export { createGuardedFetch, sharedGuardedFetch, type GuardedFetchOptions } from './guarded-fetch';
export { describeNetworkFailure, type NetworkFailure } from './network-failure';
export {
  AnswerTooLarge,
  ConnectionIdle,
  defaultMaxAnswerBytes,
  limitSocket,
  type SocketLimits,
} from './socket-limits';
export { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after';
export {
  tenantUrlChecker,
  type ResolveAll,
  type TenantUrlChecker,
  type TenantUrlCheckOptions,
  type TenantUrlRefusal,
} from './tenant-url';
