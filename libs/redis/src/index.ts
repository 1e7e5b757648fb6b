export { closeRedis, createRedis, type Redis } from './redis-client';
export { redisConfigSchema, type RedisConfig } from './redis-config';
