import { randomUUID } from 'node:crypto';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import {
  collect,
  event,
  startHosted,
  type CommittedEvent,
  type Hosted,
  type HostedTenant,
} from '../testing/ingestion-harness';
import { orderPlan } from '../testing/order-plan';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

const plan = orderPlan(['order_id', 'subtotal']);

interface Group {
  eventName: string;
  code: string;
  path: string;
  total: number;
  series: number[];
  samples: { messageId: string; code: string; event: { properties: Record<string, unknown> } }[];
}

// The violations API end to end (docs/tracking-plans.md, "Violations over time"): events sent
// through hosted ingestion with a bound plan are counted in a real Redis, and the real control
// plane (PostgreSQL) answers the counts of its API for the plan's account only.
describe('tracking plan violations API over hosted ingestion (real control plane, PostgreSQL, Redis, Kafka)', () => {
  let h: Hosted;
  let planId: string;
  const since = new Date(Date.now() - 60_000).toISOString();

  const api = (tenant: HostedTenant) => h.controlPlane.as(tenant.apiKey);
  const send = (tenant: HostedTenant, events: Record<string, unknown>[]) =>
    collect(h.app).set('X-Write-Key', tenant.openWriteKey).send({ batch: events });
  const order = (properties: Record<string, unknown>) =>
    event({ event: 'Order Completed', properties, messageId: `order-${randomUUID()}` });
  const violations = (tenant: HostedTenant, plan: string, query: Record<string, string | number>) =>
    api(tenant).get(`/api/v1/tracking-plans/${plan}/violations`).query(query);
  const totalOf = async (query: Record<string, string | number>) =>
    ((await violations(h.tenants.a, planId, query)).body.data?.total as number | undefined) ?? -1;

  beforeAll(async () => {
    h = await startHosted('plan violations', {
      tenantChanges: true,
      backstopEps: 1_000_000,
      debugger: { connection: { REDIS_URL }, maxPerSecond: 10_000 },
      violationCounts: { connection: { REDIS_URL } },
    });
    await waitUntil('tenant changes heard', async () => h.tenantChanges?.live);
    const tenant = h.tenants.a;
    const created = await api(tenant).post('/api/v1/tracking-plans').send({ name: 'Orders', plan });
    expect(created.status).toBe(201);
    planId = created.body.data.id as string;
    expect((await api(tenant).post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
    const bound = await api(tenant)
      .put(`/api/v1/write-keys/${tenant.openWriteKeyId}/tracking-plan`)
      .send({ planId, version: 'latest', policy: { actions: {} } });
    expect(bound.status).toBe(200);
    // A valid probe until ingestion holds the key to the plan: probes count no violation.
    await waitUntil('the binding heard', async () => {
      const probe = order({ order_id: 'o-probe', subtotal: 1 });
      expect((await send(tenant, [probe])).status).toBe(202);
      let found: CommittedEvent | undefined;
      await waitUntil('probe committed', async () => {
        found = (await h.readTopic()).find((c) => c.event.messageId === probe.messageId);
        return found !== undefined;
      });
      return found?.plan?.planId === planId;
    });
  }, 120_000);
  afterAll(async () => {
    await h.close();
  });

  it('answers exactly the 70 missing_required and 30 type_mismatch violations sent, by minute and by hour', async () => {
    const missing = Array.from({ length: 70 }, (_, i) => order({ order_id: `o-${i}` }));
    const mistyped = Array.from({ length: 30 }, (_, i) => order({ order_id: i, subtotal: 10 }));
    for (let i = 0; i < 100; i += 25)
      expect((await send(h.tenants.a, [...missing, ...mistyped].slice(i, i + 25))).status).toBe(202);
    const until = () => new Date(Date.now() + 60_000).toISOString();
    await waitUntil('100 violations counted', async () => (await totalOf({ since, until: until() })) === 100);

    const byMinute = await violations(h.tenants.a, planId, {
      since,
      until: until(),
      granularity: 'minute',
      samples: 5,
    });
    expect(byMinute.status).toBe(200);
    const groups = byMinute.body.data.groups as Group[];
    expect(groups.map((g) => [g.eventName, g.code, g.path, g.total])).toEqual([
      ['Order Completed', 'missing_required', '/properties/subtotal', 70],
      ['Order Completed', 'type_mismatch', '/properties/order_id', 30],
    ]);
    for (const g of groups) {
      expect(g.series).toHaveLength(byMinute.body.data.buckets.length);
      expect(g.series.reduce((a, b) => a + b, 0)).toBe(g.total);
      // One sample a minute per key and instance: a sample for each minute the events spanned.
      expect(g.samples.length).toBeGreaterThanOrEqual(1);
      expect(g.samples.length).toBeLessThanOrEqual(5);
      for (const s of g.samples) expect(s.code).toBe(g.code);
    }
    const sent = new Set([...missing, ...mistyped].map((e) => e.messageId));
    for (const s of groups.flatMap((g) => g.samples)) expect(sent.has(s.messageId)).toBe(true);
    expect(groups[1]!.samples[0]!.event.properties).toMatchObject({ subtotal: 10 });

    const byHour = await violations(h.tenants.a, planId, {
      since: new Date(Date.now() - 3_600_000).toISOString(),
      until: until(),
      granularity: 'hour',
      groupBy: 'code',
      samples: 1,
    });
    expect(byHour.status).toBe(200);
    const hourly = byHour.body.data.groups as Group[];
    expect(hourly.map((g) => [g.code, g.total, g.samples.length])).toEqual([
      ['missing_required', 70, 1],
      ['type_mismatch', 30, 1],
    ]);
    for (const g of hourly) expect(g.series.reduce((a, b) => a + b, 0)).toBe(g.total);
  }, 120_000);

  it('is 404 for another account, whose own plans show none', async () => {
    const b = h.tenants.b;
    const foreign = await violations(b, planId, {});
    expect([foreign.status, foreign.body.code]).toEqual([404, 'not_found']);
    const created = await api(b).post('/api/v1/tracking-plans').send({ name: 'Orders', plan });
    const own = await violations(b, created.body.data.id as string, { granularity: 'hour', since });
    expect([own.status, own.body.data.total, own.body.data.groups]).toEqual([200, 0, []]);
  });

  it('refuses a bad window with 400 validation_failed', async () => {
    const answer = await violations(h.tenants.a, planId, {
      since: new Date(Date.now() - 3 * 86_400_000).toISOString(),
      granularity: 'minute',
    });
    expect([answer.status, answer.body.code, answer.body.errors[0].path]).toEqual([
      400,
      'validation_failed',
      'query.granularity',
    ]);
  });
});
