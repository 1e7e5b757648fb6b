export { closeRedis, createRedis, createSubscriber, type Redis } from './redis-client';
export { redisConfigSchema, type RedisConfig } from './redis-config';
