import { Redis } from 'ioredis';
import type { Logger } from '@pipeline/logger';
import type { RedisConfig } from './redis-config';

export type { Redis } from 'ioredis';

/**
 * A client for the shared counter store. Commands fail fast while the server is away (no
 * unbounded offline queue): callers of a rate limiter or dedupe check decide what to do
 * without Redis rather than hang.
 */
export function createRedis(
  config: RedisConfig,
  options: {
    logger: Logger;
    keyPrefix?: string;
    /** CLIENT SETNAME on connect: an operator (or a test) finds the connection in CLIENT LIST. */
    connectionName?: string;
  },
): Redis {
  const client = new Redis(config.REDIS_URL, {
    lazyConnect: true,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    connectTimeout: 2000,
    keyPrefix: options.keyPrefix ?? '',
    // Commands issued in the same tick by concurrent requests leave in one write.
    enableAutoPipelining: true,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let lastError = '';
  client.on('error', (error: Error) => {
    // ioredis repeats the same error on every reconnect attempt; log changes only.
    if (error.message !== lastError) options.logger.warn('redis error', { error: error.message });
    lastError = error.message;
  });
  client.on('ready', () => {
    lastError = '';
  });
  return client;
}

/** Closes after pending replies arrive; a client that never connected is simply disconnected. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'ready') await client.quit();
  else client.disconnect();
}

/**
 * A connection for SUBSCRIBE (a subscribed connection can issue nothing else). Unlike the
 * counter client it queues the subscription until Redis answers and subscribes again after
 * every reconnect, so a broadcast channel survives Redis restarts.
 */
export function createSubscriber(config: RedisConfig, options: { logger: Logger }): Redis {
  const client = new Redis(config.REDIS_URL, {
    lazyConnect: true,
    enableOfflineQueue: true,
    autoResubscribe: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: null,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
  let lastError = '';
  client.on('error', (error: Error) => {
    if (error.message !== lastError) options.logger.warn('redis subscriber error', { error: error.message });
    lastError = error.message;
  });
  client.on('ready', () => {
    lastError = '';
  });
  return client;
}
