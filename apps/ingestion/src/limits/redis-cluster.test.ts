import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { loadConfig } from '@pipeline/config';
import { createLogger } from '@pipeline/logger';
import {
  debuggerKeys,
  DebugStreamWriter,
  isCluster,
  redisConfigSchema,
  type RedisConnection,
} from '@pipeline/redis';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import {
  collect,
  event,
  startHosted,
  type Hosted,
  type IngestionInstance,
} from '../testing/ingestion-harness';

// /collect with REDIS_CLUSTER_NODES: the limits, the batch dedupe, the debugger's streams and
// the tenant changes on a real three-node Redis Cluster (REDIS_CLUSTER_NODES_TEST, which the
// test command starts: tools/lib/throwaway-services.sh). Two ingestion instances share it.

const NODES = process.env.REDIS_CLUSTER_NODES_TEST;

/** The seed list, validated as the services validate REDIS_CLUSTER_NODES. */
function clusterConnection(): RedisConnection {
  if (!NODES)
    throw new Error(
      'REDIS_CLUSTER_NODES_TEST is not set: start a Redis Cluster (eval "$(bash tools/lib/throwaway-services.sh start)") or run tools/test.sh',
    );
  const { REDIS_CLUSTER_NODES } = loadConfig(redisConfigSchema, { REDIS_CLUSTER_NODES: NODES });
  if (!REDIS_CLUSTER_NODES) throw new Error('REDIS_CLUSTER_NODES_TEST names no node');
  return { REDIS_CLUSTER_NODES };
}

const quiet = createLogger({ service: 'redis-cluster-test', stream: new PassThrough() });
const batchOf = (n: number) => ({ batch: Array.from({ length: n }, () => event()) });

describe('/collect on a Redis Cluster (real cluster, Kafka, PostgreSQL, control plane)', () => {
  // Without the cluster this suite fails here, by name, instead of skipping (CI=true or not).
  const connection = clusterConnection();
  let h: Hosted;
  let other: IngestionInstance;
  let ms = Date.UTC(2026, 0, 15, 12, 0, 0, 100);
  const now = () => ms;

  beforeAll(async () => {
    h = await startHosted('redis cluster', {
      redis: connection,
      tenantChanges: true,
      debugger: { connection, maxPerSecond: 1000 },
      perSecond: 10,
      backstopEps: 1_000_000,
      now,
    });
    other = await h.startInstance();
  });
  afterAll(() => h?.close());

  it('connects every client of both instances to the cluster', () => {
    for (const client of [h.redis, h.debugRedis, other.redis, other.debugRedis])
      expect(client && isCluster(client) && client.status).toBe('ready');
  });

  it('refuses over the per-second limit across the two instances: one shared count', async () => {
    ms += 1000;
    const key = h.tenants.a.openWriteKey;
    const send = (app: Hosted['app'], n: number) => collect(app).set('X-Write-Key', key).send(batchOf(n));
    expect((await send(h.app, 6)).status).toBe(202);
    expect((await send(other.app, 4)).status).toBe(202);
    for (const app of [other.app, h.app]) {
      const over = await send(app, 1);
      expect(over.status).toBe(429);
      expect(over.body).toEqual({
        ok: false,
        error: 'rate_limit_exceeded',
        limitType: 'second',
        retryAfter: 1,
      });
    }
    const second = Math.floor(ms / 1000);
    expect(await h.redis?.get(`rl:s:{${h.tenants.a.openWriteKeyId}}:${second}`)).toBe('10');
    // The next second has its own budget, on either instance.
    ms += 1000;
    expect((await send(other.app, 10)).status).toBe(202);
  });

  it('answers a retried batch as deduplicated, on the other instance too, and publishes it once', async () => {
    ms += 1000;
    const body = batchOf(2);
    const ids = body.batch.map((e) => e.messageId);
    const key = h.tenants.b.openWriteKey;
    const first = await collect(h.app).set('X-Write-Key', key).send(body);
    expect(first.status).toBe(202);
    expect(first.body).toMatchObject({ accepted: true, deduplicated: false });
    for (const app of [h.app, other.app]) {
      const retry = await collect(app).set('X-Write-Key', key).send(body);
      expect(retry.status).toBe(202);
      expect(retry.body).toMatchObject({ accepted: true, deduplicated: true, batchId: first.body.batchId });
    }
    const published = (await h.readTopic()).filter((c) => ids.includes(c.event.messageId as string));
    expect(published.map((c) => c.event.messageId).sort()).toEqual([...ids].sort());
  });

  it("records the debugger's streams of several write keys at once, and the control plane reads them", async () => {
    ms += 1000;
    const { a, b } = h.tenants;
    const sent = { a: event({ event: 'Cluster A' }), b: event({ event: 'Cluster B' }) };
    // In one tick: the writer's queue then holds both streams, which hash to different slots.
    const answers = await Promise.all([
      collect(h.app)
        .set('X-Write-Key', a.writeKey)
        .set('Origin', 'https://example.com')
        .send({ batch: [sent.a] }),
      collect(h.app)
        .set('X-Write-Key', b.writeKey)
        .set('Origin', 'https://example.com')
        .send({ batch: [sent.b] }),
    ]);
    expect(answers.map((r) => r.status)).toEqual([202, 202]);
    for (const [tenant, sentEvent] of [
      [a, sent.a],
      [b, sent.b],
    ] as const) {
      await waitUntil(
        `${sentEvent.event} in the debugger`,
        async () => {
          const listed = await h.controlPlane
            .as(tenant.apiKey)
            .get(`/api/v1/write-keys/${tenant.writeKeyId}/events`);
          return (
            listed.status === 200 &&
            listed.body.data.some((e: { messageId: string }) => e.messageId === sentEvent.messageId)
          );
        },
        10_000,
      );
      const entries = (await h.debugRedis?.xrange(debuggerKeys.events(tenant.writeKeyId), '-', '+')) ?? [];
      expect(entries.length).toBeGreaterThan(0);
    }
    expect(h.debugStats?.failed).toBe(0);
  });

  it('writes in one flush the debugger streams of write keys on different nodes', async () => {
    const redis = h.debugRedis;
    if (!redis) throw new Error('no debugger client');
    const writer = new DebugStreamWriter(redis, { maxLen: 10, ttlSeconds: 60, maxPerSecond: 10 }, quiet);
    const keys = Array.from({ length: 12 }, () => debuggerKeys.events(`test-${randomUUID()}`));
    // One synchronous turn: the writer's queue leaves at once, holding streams of every node.
    for (const key of keys) writer.add(key, ['d', key]);
    await waitUntil(
      'the entries acknowledged',
      async () => writer.stats.recorded + writer.stats.failed === 12,
      10_000,
    );
    expect(writer.stats).toEqual({ recorded: 12, sampledOut: 0, failed: 0 });
    expect(await Promise.all(keys.map((key) => redis.xlen(key)))).toEqual(keys.map(() => 1));
    expect(Math.min(...(await Promise.all(keys.map((key) => redis.ttl(key)))))).toBeGreaterThan(0);
    await Promise.all(keys.map((key) => redis.del(key)));
  });

  it('hears a write key revocation broadcast over the cluster: the other instance refuses the key', async () => {
    ms += 1000;
    const api = h.controlPlane.as(h.apiKey);
    const created = (await api.post('/api/v1/write-keys').send({ name: `revoked ${randomUUID()}` })).body
      .data as {
      id: string;
      key: string;
    };
    await waitUntil(
      'both instances subscribed',
      async () => Boolean(h.tenantChanges?.live && other.tenantChanges?.live),
      10_000,
    );
    // Cached as valid on the other instance for a minute, unless the revocation is heard.
    expect((await collect(other.app).set('X-Write-Key', created.key).send(batchOf(1))).status).toBe(202);
    expect((await api.delete(`/api/v1/write-keys/${created.id}`)).status).toBe(200);
    await waitUntil(
      'the revoked key refused',
      async () => (await collect(other.app).set('X-Write-Key', created.key).send(batchOf(1))).status === 401,
      10_000,
    );
  });

  it('spreads different write keys over more than one node', async () => {
    ms += 1000;
    const api = h.controlPlane.as(h.apiKey);
    for (let i = 0; i < 12; i++) {
      const key = (await api.post('/api/v1/write-keys').send({ name: `spread ${i}` })).body.data
        .key as string;
      expect((await collect(h.app).set('X-Write-Key', key).send(batchOf(1))).status).toBe(202);
    }
    const cluster = h.redis;
    if (!cluster || !isCluster(cluster)) throw new Error('not a cluster client');
    // The node connections carry no key prefix: the pattern names it.
    const perNode = await Promise.all(
      cluster
        .nodes('master')
        .map((node) => node.keys(`${h.redisKeyPrefix}rl:d:*`).then((keys) => keys.length)),
    );
    expect(perNode).toHaveLength(3);
    expect(perNode.reduce((sum, n) => sum + n, 0)).toBeGreaterThanOrEqual(12);
    expect(perNode.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
  });
});
