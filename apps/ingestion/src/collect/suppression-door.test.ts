import { randomUUID } from 'node:crypto';
import request from 'supertest';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import { debuggerKeys, type RedisClient } from '@pipeline/redis';
import {
  collect,
  event,
  startHosted,
  type Hosted,
  type IngestionInstance,
} from '../testing/ingestion-harness';
import type { IngestionMetrics } from '../metrics/ingestion-metrics';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

const suppressed = async (metrics: IngestionMetrics) =>
  Number(/^pipeline_ingestion_events_suppressed_total (\d+)/m.exec(await metrics.text())?.[1]);

// The door (docs/tracking-api.md, "Suppressed subjects"): a real control plane on PostgreSQL
// answers the regulations API and broadcasts on a real Redis; two ingestion instances behind
// one load balancer commit to a real Kafka topic.
describe('suppressed subjects at the door (real control plane, PostgreSQL, Redis, Kafka)', () => {
  let h: Hosted;
  let second: IngestionInstance;
  const run = randomUUID();
  const x = `user-x-${run}`;
  const y = `user-y-${run}`;
  // Full Unicode: the id is hashed as the control plane hashes it, not compared as bytes of JSON.
  const unicode = `ユーザー-😀-${run}`;

  beforeAll(async () => {
    h = await startHosted('suppression door', {
      tenantChanges: true,
      backstopEps: 1_000_000,
      debugger: { connection: { REDIS_URL }, maxPerSecond: 10_000 },
    });
    second = await h.startInstance();
    await waitUntil(
      'both subscriptions live',
      async () => h.tenantChanges?.live && second.tenantChanges?.live,
    );
  }, 60_000);
  afterAll(async () => {
    await h.debugRedis?.del(debuggerKeys.events(h.openWriteKeyId));
    await h.close();
  });

  const send = (app: Hosted['app'], ...userIds: string[]) =>
    collect(app)
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: userIds.map((userId) => event({ userId, messageId: `${userId}:${randomUUID()}` })) });

  it('drops a SUPPRESS_ONLY subject on both instances within 10 s, answered as accepted, never committed or shown', async () => {
    // Both instances have the account's (empty) subjects cached: only the broadcast can change that.
    const unregulated: Awaited<ReturnType<typeof send>>[] = [];
    for (const app of [h.app, second.app]) unregulated.push(await send(app, x, y, unicode));
    for (const answer of unregulated) expect(answer.status).toBe(202);
    const { deliveryCount } = unregulated[0]?.body as { deliveryCount: number };
    const before = [await suppressed(h.metrics), await suppressed(second.metrics)];
    expect(before).toEqual([0, 0]);

    const created = await h.controlPlane
      .as(h.apiKey)
      .post('/api/v1/regulations')
      .send({ regulationType: 'SUPPRESS_ONLY', subjectType: 'USER_ID', subjectIds: [x, unicode] });
    expect(created.status).toBe(200);
    const answeredAt = Date.now();

    // Each instance, probed with a lone event of x until it drops one: the answer is the same 202
    // throughout, so only the metric tells.
    for (const [app, metrics] of [
      [h.app, h.metrics],
      [second.app, second.metrics],
    ] as const)
      await waitUntil(
        'x dropped',
        async () => {
          const answer = await send(app, x);
          expect(answer.status).toBe(202);
          return (await suppressed(metrics)) > 0;
        },
        10_000,
      );
    expect(Date.now() - answeredAt).toBeLessThan(10_000);

    // From now on, on both: x and the Unicode id dropped, y committed, the answer unchanged.
    const batchIds: string[] = [];
    for (const app of [h.app, second.app]) {
      const answer = await send(app, x, y, unicode);
      expect(answer.status).toBe(202);
      expect(answer.body).toMatchObject({
        ok: true,
        accepted: true,
        received: 3,
        invalid: 0,
        deduplicated: false,
        deliveryCount,
      });
      batchIds.push(answer.body.batchId as string);
      // A batch of only suppressed events answers as accepted and writes nothing.
      const only = await send(app, x);
      expect(only.status).toBe(202);
      expect(only.body).toMatchObject({ accepted: true, received: 1, deduplicated: false, deliveryCount });
      batchIds.push(only.body.batchId as string);
      // Segment's route answers its success body.
      const segment = await request(app)
        .post('/v1/batch')
        .set('Authorization', `Basic ${Buffer.from(`${h.openWriteKey}:`).toString('base64')}`)
        .send({ batch: [event({ userId: x, messageId: `${x}:${randomUUID()}` })] });
      expect(segment.status).toBe(200);
      expect(segment.body).toEqual({ success: true });
    }
    const counts = [await suppressed(h.metrics), await suppressed(second.metrics)];
    expect(counts[0]).toBeGreaterThanOrEqual(5);
    expect(counts[1]).toBeGreaterThanOrEqual(5);

    const committed = await h.readTopic();
    const ofBatches = committed.filter((c) => batchIds.includes(c.batchId));
    // y of each instance's mixed batch, nothing of the batches of only x.
    expect(ofBatches.map((c) => c.event.userId)).toEqual([y, y]);
    const firstDrop = committed.filter((c) => c.event.userId === x).length;
    // x's and the Unicode id's events committed are the ones sent before each instance heard
    // (the two warm-ups, and probes answered before the change).
    expect(committed.filter((c) => c.event.userId === unicode)).toHaveLength(2);
    expect(firstDrop).toBeGreaterThanOrEqual(2);

    // The debugger shows y's events of the mixed batches, never x's after the suppression.
    const redis = h.debugRedis as RedisClient;
    const recorded = (await redis.xrange(debuggerKeys.events(h.openWriteKeyId), '-', '+')) as [
      string,
      string[],
    ][];
    const shown = recorded.map(([, fields]) => JSON.parse(fields[1] as string) as { messageId: string });
    const sentAfter = new Set(ofBatches.map((c) => c.event.messageId));
    for (const messageId of sentAfter) expect(shown.some((s) => s.messageId === messageId)).toBe(true);
    const committedUnicode = new Set(
      committed.filter((c) => c.event.userId === unicode).map((c) => c.event.messageId),
    );
    expect(
      shown.filter((s) => s.messageId.startsWith(unicode) && !committedUnicode.has(s.messageId)),
    ).toEqual([]);
    const committedX = new Set(committed.filter((c) => c.event.userId === x).map((c) => c.event.messageId));
    expect(shown.filter((s) => s.messageId.startsWith(x) && !committedX.has(s.messageId))).toEqual([]);
  }, 60_000);

  it("another account's same user id is not touched", async () => {
    const other = h.tenants.b;
    const answer = await collect(h.app)
      .set('X-Write-Key', other.openWriteKey)
      .send({ batch: [event({ userId: x, messageId: `b:${x}:${randomUUID()}` })] });
    expect(answer.status).toBe(202);
    const committed = await h.readTopic();
    expect(committed.some((c) => c.accountId === other.accountId && c.event.userId === x)).toBe(true);
  });
});
