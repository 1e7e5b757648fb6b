import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Express } from 'express';
import request from 'supertest';
import { loadConfig } from '@pipeline/config';
import { createLogger } from '@pipeline/logger';
import {
  closeRedis,
  createRedis,
  isCluster,
  redisConfigSchema,
  type RedisClient,
  type RedisConnection,
} from '@pipeline/redis';
import { createApp } from '../composition';
import { startHarness, TEST_CREDENTIAL_KEYS, TEST_INTERNAL_TOKENS, type Harness } from '../testing/harness';
import { ApiKeyFailureCounter } from './api-key-failures';

// The API rate limit and the failed-key counter with REDIS_CLUSTER_NODES: a real three-node
// Redis Cluster (REDIS_CLUSTER_NODES_TEST, started by the test command). Their script and MULTI
// each touch one key, so any slot will do.

const LIMIT = 3;
const logger = createLogger({ service: 'control-plane-test', stream: new PassThrough() });

function clusterConnection(): RedisConnection {
  const nodes = process.env.REDIS_CLUSTER_NODES_TEST;
  if (!nodes)
    throw new Error(
      'REDIS_CLUSTER_NODES_TEST is not set: start a Redis Cluster (eval "$(bash tools/lib/throwaway-services.sh start)") or run tools/test.sh',
    );
  const { REDIS_CLUSTER_NODES } = loadConfig(redisConfigSchema, { REDIS_CLUSTER_NODES: nodes });
  if (!REDIS_CLUSTER_NODES) throw new Error('REDIS_CLUSTER_NODES_TEST names no node');
  return { REDIS_CLUSTER_NODES };
}

describe('the API rate limit and the failed-key counter on a Redis Cluster', () => {
  const connection = clusterConnection();
  const clients: RedisClient[] = [];
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness('api rate limit cluster');
  });
  afterAll(async () => {
    for (const client of clients) await closeRedis(client);
    await h.close();
  });

  async function cluster(keyPrefix: string): Promise<RedisClient> {
    const redis = createRedis(connection, { logger, keyPrefix });
    clients.push(redis);
    await redis.connect();
    return redis;
  }

  async function instance(keyPrefix: string): Promise<Express> {
    return createApp({
      dataSource: h.db.dataSource,
      logger,
      credentialKeys: TEST_CREDENTIAL_KEYS,
      internalTokens: TEST_INTERNAL_TOKENS,
      apiRateLimit: { enabled: true, perMinute: LIMIT, redis: await cluster(keyPrefix) },
    });
  }

  it('shares one budget per API key across two instances', async () => {
    const prefix = `cp-test:${randomUUID()}:`;
    const [first, second] = [await instance(prefix), await instance(prefix)];
    const t = await h.tenant();
    const statuses: number[] = [];
    for (const app of [first, second, first, second])
      statuses.push(
        (await request(app).get('/api/v1/write-keys').set('Authorization', `Bearer ${t.key}`)).status,
      );
    expect(statuses).toEqual([200, 200, 200, 429]);
    const raw = await cluster('');
    if (!isCluster(raw)) throw new Error('not a cluster client');
    // KEYS answers for one node: each primary is asked.
    const keys = (await Promise.all(raw.nodes('master').map((node) => node.keys(`${prefix}*`)))).flat();
    expect(keys).toEqual([
      expect.stringMatching(new RegExp(`^${prefix}api-rate-limit:api-key:[0-9a-f-]{36}$`)),
    ]);
    const [key = ''] = keys;
    expect(await raw.get(key)).toBe('4');
    expect(await raw.pttl(key)).toBeGreaterThan(0);
    await raw.del(key);
  });

  it('counts failed keys per address in the cluster, with the window’s expiry', async () => {
    const redis = await cluster(`cp-test:${randomUUID()}:`);
    const counter = new ApiKeyFailureCounter(redis, logger);
    await counter.fail('198.51.100.7');
    await counter.fail('198.51.100.7');
    await counter.fail('203.0.113.9');
    expect(await counter.failures('198.51.100.7')).toBe(2);
    expect(await counter.failures('203.0.113.9')).toBe(1);
  });
});
