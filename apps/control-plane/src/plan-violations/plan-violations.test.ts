import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { createRedis, ViolationLedger, type RedisClient, type ViolationKey } from '@pipeline/redis';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const logger = createLogger({ service: 'plan-violations-test', stream: new PassThrough() });

const HOUR = 3_600_000;
// Two minutes of one hour, a few hours ago: inside the minute buckets' two days.
const hourStart = Math.floor(Date.now() / HOUR) * HOUR - 3 * HOUR;
const t0 = hourStart + 10 * 60_000;
const t1 = t0 + 60_000;
const iso = (at: number) => new Date(at).toISOString();

// The violations API over counts written by ingestion's own writer (ViolationLedger) into a real
// Redis, with plans in a real PostgreSQL. The end-to-end path through hosted ingestion is in
// apps/ingestion (plan-violations-hosted.test.ts).
describe('tracking plan violations API (real PostgreSQL and Redis)', () => {
  let h: Harness;
  let t: Tenant;
  let other: Tenant;
  let redis: RedisClient;
  let planId: string;
  let otherPlanId: string;

  const key = (overrides: Partial<ViolationKey> = {}): ViolationKey => ({
    planId,
    version: 1,
    writeKeyId: 'wk-1',
    eventType: 'track',
    eventName: 'Order Completed',
    code: 'missing_required',
    path: '/properties/subtotal',
    ...overrides,
  });
  const sample = (id: string, at: number) => () => ({
    messageId: id,
    receivedAt: iso(at),
    message: '/properties/subtotal is required',
    payload: { type: 'track', event: 'Order Completed', messageId: id },
  });
  /** Writes with ingestion's ledger as if at `at`, and waits until Redis has it. */
  async function record(accountId: string, at: number, entries: [ViolationKey, number, string][]) {
    const ledger = new ViolationLedger(redis, logger, {}, () => at);
    ledger.record(
      accountId,
      entries.map(([k, count, id]) => ({ key: k, count, sample: sample(id, at) })),
    );
    const total = entries.reduce((sum, [, count]) => sum + count, 0);
    await waitUntil('counts written', async () => ledger.stats.recorded === total);
  }
  const get = (tenant: Tenant, plan: string, query: Record<string, string | number> = {}) =>
    h
      .as(tenant.key)
      .get(`/api/v1/tracking-plans/${plan}/violations`)
      .query({ since: iso(hourStart), until: iso(hourStart + HOUR), ...query });

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger });
    await redis.connect();
    h = await startHarness('plan violations', { debugger: { redis, connection: { REDIS_URL } } });
    t = await h.tenant();
    other = await h.tenant();
    const create = async (tenant: Tenant) =>
      (await h.as(tenant.key).post('/api/v1/tracking-plans').send({ name: 'Orders' })).body.data.id as string;
    planId = await create(t);
    otherPlanId = await create(other);
    await record(t.accountId, t0, [
      [key(), 5, 'm-a0'],
      [key({ writeKeyId: 'wk-2' }), 2, 'm-b0'],
      [key({ planId: otherPlanId }), 100, 'm-x0'],
    ]);
    await record(t.accountId, t1, [
      [key(), 3, 'm-a1'],
      [key({ code: 'type_mismatch', path: '/properties/order_id' }), 4, 'm-c1'],
    ]);
  }, 60_000);
  afterAll(async () => {
    await h.close();
    redis.disconnect();
  });

  it('answers minute buckets with a point per bucket and the newest samples per group', async () => {
    const answer = await get(t, planId, {
      since: iso(t0 - 60_000),
      until: iso(t1 + 120_000),
      granularity: 'minute',
      samples: 3,
    });
    expect(answer.status).toBe(200);
    expect(answer.body.data).toMatchObject({
      planId,
      granularity: 'minute',
      groupBy: ['event', 'code', 'path'],
      buckets: [iso(t0 - 60_000), iso(t0), iso(t1), iso(t1 + 60_000)],
      total: 14,
      overflow: 0,
      groupsLeftOff: 0,
    });
    const [first, second] = answer.body.data.groups;
    expect(answer.body.data.groups).toHaveLength(2);
    expect(first).toMatchObject({
      eventType: 'track',
      eventName: 'Order Completed',
      code: 'missing_required',
      path: '/properties/subtotal',
      total: 10,
      series: [0, 7, 3, 0],
    });
    // Newest first across the group's keys (wk-1 and wk-2); the two of t0 in either order.
    const ids = first.samples.map((s: { messageId: string }) => s.messageId) as string[];
    expect([ids[0], ids.slice(1).sort()]).toEqual(['m-a1', ['m-a0', 'm-b0']]);
    expect(first.samples[0]).toEqual({
      messageId: 'm-a1',
      receivedAt: iso(t1),
      message: '/properties/subtotal is required',
      code: 'missing_required',
      path: '/properties/subtotal',
      version: 1,
      writeKeyId: 'wk-1',
      event: { type: 'track', event: 'Order Completed', messageId: 'm-a1' },
    });
    expect(second).toMatchObject({ code: 'type_mismatch', total: 4, series: [0, 0, 4, 0] });
    expect(second.samples.map((s: { messageId: string }) => s.messageId)).toEqual(['m-c1']);
  });

  it('reads a day by the minute from a since inside a minute as 1,440 whole buckets', async () => {
    // since's own minute would make 1,441: the window starts at the next one.
    const since = t0 + 30_000 - 86_400_000;
    const answer = await get(t, planId, { since: iso(since), until: iso(t0 + 30_000), samples: 0 });
    expect(answer.status).toBe(200);
    const { buckets, granularity, groups } = answer.body.data;
    expect([granularity, buckets.length, buckets[0], buckets[1439]]).toEqual([
      'minute',
      1440,
      iso(t0 + 60_000 - 86_400_000),
      iso(t0),
    ]);
    expect(groups.map((g: { total: number; series: number[] }) => [g.total, g.series[1439]])).toEqual([
      [7, 7],
    ]);
  });

  it('answers hour buckets, other groupings and filters', async () => {
    const hourly = await get(t, planId, { granularity: 'hour', groupBy: 'writeKey', samples: 0 });
    expect(hourly.status).toBe(200);
    expect(hourly.body.data.buckets).toEqual([iso(hourStart)]);
    expect(
      hourly.body.data.groups.map(
        (g: { writeKeyId: string; total: number; series: number[]; samples: [] }) => [
          g.writeKeyId,
          g.total,
          g.series,
          g.samples,
        ],
      ),
    ).toEqual([
      ['wk-1', 12, [12], []],
      ['wk-2', 2, [2], []],
    ]);
    const byCode = await get(t, planId, {
      granularity: 'hour',
      groupBy: 'code,version',
      code: 'missing_required',
    });
    expect(
      byCode.body.data.groups.map((g: { code: string; version: number; total: number }) => [
        g.code,
        g.version,
        g.total,
      ]),
    ).toEqual([['missing_required', 1, 10]]);
    expect(byCode.body.data.groups[0]).not.toHaveProperty('path');
    const oneKey = await get(t, planId, { granularity: 'hour', writeKeyId: 'wk-2' });
    expect(oneKey.body.data.total).toBe(2);
    const otherPlan = await get(t, otherPlanId, { granularity: 'hour' });
    expect(otherPlan.status).toBe(404);
  });

  it('is 404 for another account’s plan, and its own plans show none', async () => {
    const foreign = await get(other, planId);
    expect([foreign.status, foreign.body.code]).toEqual([404, 'not_found']);
    // The other account's plan id was counted under t's account: never read for other.
    const own = await get(other, otherPlanId, { granularity: 'hour' });
    expect(own.status).toBe(200);
    expect([own.body.data.total, own.body.data.groups]).toEqual([0, []]);
  });

  it.each([
    [{ since: 'yesterday' }, 'query.since'],
    [{ until: '2026-11-29' }, 'query.until'],
    [{ granularity: 'day' }, 'query.granularity'],
    [{ since: iso(hourStart - 48 * HOUR), granularity: 'minute' }, 'query.granularity'],
    [{ groupBy: 'event,country' }, 'query.groupBy'],
    [{ samples: 9 }, 'query.samples'],
    [{ version: 0 }, 'query.version'],
  ])('refuses %j with 400 validation_failed naming %s', async (query, path) => {
    const answer = await get(t, planId, query);
    expect([answer.status, answer.body.code, answer.body.errors?.[0]?.path]).toEqual([
      400,
      'validation_failed',
      path,
    ]);
  });

  it('needs tracking_plans.read', async () => {
    const key = await t.keyWith(['write_keys.read']);
    expect((await h.as(key).get(`/api/v1/tracking-plans/${planId}/violations`)).status).toBe(403);
  });

  it('answers 503 violations_unavailable without Redis and when Redis fails', async () => {
    const bare = await startHarness('plan violations without redis');
    const closed = createRedis({ REDIS_URL }, { logger });
    await closed.connect();
    const broken = await startHarness('plan violations, redis closed', {
      debugger: { redis: closed, connection: { REDIS_URL } },
    });
    try {
      for (const harness of [bare, broken]) {
        const tenant = await harness.tenant();
        const plan = (await harness.as(tenant.key).post('/api/v1/tracking-plans').send({ name: 'p' })).body
          .data.id;
        if (harness === broken) closed.disconnect();
        const answer = await harness.as(tenant.key).get(`/api/v1/tracking-plans/${plan}/violations`);
        expect([answer.status, answer.body.code]).toEqual([503, 'violations_unavailable']);
      }
    } finally {
      await bare.close();
      await broken.close();
    }
  }, 60_000);
});
