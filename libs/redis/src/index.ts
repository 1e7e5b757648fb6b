export {
  closeRedis,
  createRedis,
  createSubscriber,
  isCluster,
  type Cluster,
  type RedisClient,
} from './redis-client';
export {
  parseRedisNode,
  redisClusterNodesField,
  redisConfigSchema,
  redisConnectionOf,
  type RedisConfig,
  type RedisConnection,
  type RedisNode,
} from './redis-config';
export {
  debuggerKeys,
  debugPayload,
  DebugStreamWriter,
  DEBUG_PAYLOAD_MAX_BYTES,
  type DebugEventError,
  type DebugEventRecord,
  type DebugViolation,
  type DebugPlanAction,
  type DebugPlanDecision,
  type DebugStreamOptions,
  type DebugStreamStats,
  type DeliveryOutcome,
  type DeliveryOutcomeRecord,
} from './debug-streams';
