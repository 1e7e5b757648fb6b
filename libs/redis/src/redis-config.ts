import { z } from 'zod';
import { envList, envUrl } from '@pipeline/config';

/** One seed node of a Redis Cluster. */
export interface RedisNode {
  host: string;
  port: number;
}

const hostPort = /^(?<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?<port>\d{1,5})$/;

/** `host:port`, an IPv6 host in brackets; the port 1..65535. */
export function parseRedisNode(text: string): RedisNode | null {
  const match = hostPort.exec(text);
  const port = Number(match?.groups?.port);
  if (!match?.groups?.host || !Number.isInteger(port) || port < 1 || port > 65535) return null;
  return { host: match.groups.host.replace(/^\[(.*)\]$/, '$1'), port };
}

/**
 * `REDIS_CLUSTER_NODES`: the same field in every service's schema (each spreads it beside its
 * own REDIS_URL), so one deployment setting moves every service to the cluster.
 */
export const redisClusterNodesField = envList()
  .pipe(
    z.array(z.string()).transform((items, context) => {
      const nodes: RedisNode[] = [];
      for (const item of items) {
        const node = parseRedisNode(item);
        if (node) nodes.push(node);
        else context.addIssue({ code: 'custom', message: `expected host:port, got "${item}"` });
      }
      return nodes;
    }),
  )
  .optional()
  .describe(
    'Redis Cluster seed nodes, comma-separated `host:port` (any few of the cluster’s primaries); set, every Redis client of the service connects to the cluster instead of `REDIS_URL`’s single server.',
  );

export const redisConfigSchema = z.object({
  REDIS_URL: envUrl(['redis', 'rediss'], 'redis://127.0.0.1:6379').describe('The Redis server.'),
  REDIS_CLUSTER_NODES: redisClusterNodesField,
});

export type RedisConfig = z.infer<typeof redisConfigSchema>;

/**
 * Where a client connects: a cluster when seed nodes are given (REDIS_URL is then ignored),
 * the single server of REDIS_URL otherwise.
 */
export type RedisConnection =
  | { REDIS_URL: string; REDIS_CLUSTER_NODES?: readonly RedisNode[] | undefined }
  | { REDIS_URL?: string | undefined; REDIS_CLUSTER_NODES: readonly RedisNode[] };

/** A service's optional settings as a connection; null when neither names a Redis. */
export function redisConnectionOf(settings: {
  REDIS_URL?: string | undefined;
  REDIS_CLUSTER_NODES?: readonly RedisNode[] | undefined;
}): RedisConnection | null {
  if (settings.REDIS_CLUSTER_NODES && settings.REDIS_CLUSTER_NODES.length > 0)
    return { REDIS_CLUSTER_NODES: settings.REDIS_CLUSTER_NODES };
  if (settings.REDIS_URL) return { REDIS_URL: settings.REDIS_URL };
  return null;
}
