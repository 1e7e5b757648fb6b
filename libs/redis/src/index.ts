export { closeRedis, createRedis, createSubscriber, type Redis } from './redis-client';
export { redisConfigSchema, type RedisConfig } from './redis-config';
export {
  debuggerKeys,
  debugPayload,
  DebugStreamWriter,
  DEBUG_PAYLOAD_MAX_BYTES,
  type DebugEventError,
  type DebugEventRecord,
  type DebugStreamOptions,
  type DebugStreamStats,
  type DeliveryOutcome,
  type DeliveryOutcomeRecord,
} from './debug-streams';
