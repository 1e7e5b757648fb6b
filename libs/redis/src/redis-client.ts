import { Cluster, Redis } from 'ioredis';
import type { Logger } from '@pipeline/logger';
import type { RedisConnection } from './redis-config';

/**
 * A client of the shared counter store: one server's, or a Redis Cluster's
 * (REDIS_CLUSTER_NODES). Both take the same commands; in a cluster a command's keys (a script's,
 * a MULTI's, a pipeline's) must share one hash slot, which is why keys that travel together
 * carry the same `{hash tag}`.
 */
export type { Cluster };
export type RedisClient = Redis | Cluster;

const retryStrategy = (attempt: number) => Math.min(attempt * 200, 2000);

/** True for a cluster client: what one pipeline may span differs (one node's slots only). */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

function logChangedErrors(client: RedisClient, logger: Logger, message: string): void {
  let lastError = '';
  client.on('error', (error: Error) => {
    // ioredis repeats the same error on every reconnect attempt; log changes only.
    if (error.message !== lastError) logger.warn(message, { error: error.message });
    lastError = error.message;
  });
  client.on('ready', () => {
    lastError = '';
  });
}

/**
 * A client for the shared counter store. Commands fail fast while the server is away (no
 * unbounded offline queue): callers of a rate limiter or dedupe check decide what to do
 * without Redis rather than hang.
 */
export function createRedis(
  config: RedisConnection,
  options: {
    logger: Logger;
    keyPrefix?: string;
    /** CLIENT SETNAME on connect: an operator (or a test) finds the connection in CLIENT LIST. */
    connectionName?: string;
  },
): RedisClient {
  const perConnection = {
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
    maxRetriesPerRequest: 1,
    connectTimeout: 2000,
  };
  const shared = {
    lazyConnect: true,
    enableOfflineQueue: false,
    keyPrefix: options.keyPrefix ?? '',
    // Commands issued in the same tick by concurrent requests leave in one write (per node).
    enableAutoPipelining: true,
  };
  const nodes = config.REDIS_CLUSTER_NODES;
  const client: RedisClient =
    nodes && nodes.length > 0
      ? new Cluster(
          nodes.map((node) => ({ ...node })),
          { ...shared, redisOptions: perConnection, clusterRetryStrategy: retryStrategy },
        )
      : new Redis(config.REDIS_URL ?? '', { ...shared, ...perConnection, retryStrategy });
  logChangedErrors(client, options.logger, 'redis error');
  return client;
}

/** Closes after pending replies arrive; a client that never connected is simply disconnected. */
export async function closeRedis(client: RedisClient): Promise<void> {
  if (client.status === 'ready') await client.quit();
  else client.disconnect();
}

/**
 * A connection for SUBSCRIBE (a subscribed connection can issue nothing else). Unlike the
 * counter client it queues the subscription until Redis answers and subscribes again after
 * every reconnect, so a broadcast channel survives Redis restarts. In a cluster a PUBLISH on
 * any node reaches subscribers on every node: one subscription suffices.
 */
export function createSubscriber(config: RedisConnection, options: { logger: Logger }): RedisClient {
  const perConnection = { connectTimeout: 2000, maxRetriesPerRequest: null };
  const shared = { lazyConnect: true, enableOfflineQueue: true, autoResubscribe: true };
  const nodes = config.REDIS_CLUSTER_NODES;
  const client: RedisClient =
    nodes && nodes.length > 0
      ? new Cluster(
          nodes.map((node) => ({ ...node })),
          {
            lazyConnect: true,
            enableOfflineQueue: true,
            redisOptions: { ...perConnection, autoResubscribe: true },
            clusterRetryStrategy: retryStrategy,
          },
        )
      : new Redis(config.REDIS_URL ?? '', { ...shared, ...perConnection, retryStrategy });
  logChangedErrors(client, options.logger, 'redis subscriber error');
  return client;
}
