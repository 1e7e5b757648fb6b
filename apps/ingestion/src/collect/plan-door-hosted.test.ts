import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import type { TrackingEvent } from '@pipeline/events';
import {
  debuggerKeys,
  readViolationBuckets,
  readViolationSamples,
  type DebugEventRecord,
  type RedisClient,
} from '@pipeline/redis';
import { compilePlan, ruleVersionPin, type PlanPolicy, type TrackingPlan } from '@pipeline/tracking-plans';
import {
  collect,
  event,
  startHosted,
  type CommittedEvent,
  type Hosted,
  type HostedTenant,
} from '../testing/ingestion-harness';
import type { IngestionMetrics } from '../metrics/ingestion-metrics';
import { orderPlan } from '../testing/order-plan';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

// The warehouse keeps what the others are kept from: the debugger shows both actions.
const policy: PlanPolicy = {
  actions: { missing_required: 'quarantine', unplanned_property: 'omit' },
  destinations: { warehouse: { missing_required: 'allow' } },
};

const sample = async (metrics: IngestionMetrics, series: string) => {
  const text = await metrics.text();
  const escaped = series.replace(/[{}"]/g, (c) => `\\${c}`);
  return Number(new RegExp(`^${escaped} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
};

// The plan door (docs/tracking-plans.md, "Validation at the door"): a real control plane on
// PostgreSQL holds the plans and bindings and broadcasts their changes on a real Redis; the
// ingestion instances read the versions from it and commit the verdicts to a real Kafka topic.
describe('tracking plans at the door (real control plane, PostgreSQL, Redis, Kafka)', () => {
  let h: Hosted;

  beforeAll(async () => {
    h = await startHosted('plan door', {
      tenantChanges: true,
      backstopEps: 1_000_000,
      debugger: { connection: { REDIS_URL }, maxPerSecond: 10_000 },
      violationCounts: { connection: { REDIS_URL } },
    });
    await waitUntil('tenant changes heard', async () => h.tenantChanges?.live);
  }, 60_000);
  afterAll(async () => {
    await h.debugRedis?.del(
      ...[h.tenants.a, h.tenants.b].map((tenant) => debuggerKeys.events(tenant.openWriteKeyId)),
    );
    await h.close();
  });

  const api = (tenant: HostedTenant) => h.controlPlane.as(tenant.apiKey);
  /** A plan of the tenant's account with `plan` published as version 1. */
  async function publishedPlan(tenant: HostedTenant, plan: TrackingPlan): Promise<string> {
    const created = await api(tenant)
      .post('/api/v1/tracking-plans')
      .send({ name: `plan ${randomUUID()}`, plan });
    expect(created.status).toBe(201);
    const planId = (created.body.data as { id: string }).id;
    expect((await api(tenant).post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
    return planId;
  }
  async function publish(tenant: HostedTenant, planId: string, plan: TrackingPlan): Promise<void> {
    expect((await api(tenant).put(`/api/v1/tracking-plans/${planId}/draft`).send(plan)).status).toBe(200);
    expect((await api(tenant).post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
  }
  async function bind(tenant: HostedTenant, planId: string, version: 'latest' | number = 'latest') {
    const bound = await api(tenant)
      .put(`/api/v1/write-keys/${tenant.openWriteKeyId}/tracking-plan`)
      .send({ planId, version, policy });
    expect(bound.status).toBe(200);
  }
  const send = (tenant: HostedTenant, events: Record<string, unknown>[], app = h.app) =>
    collect(app).set('X-Write-Key', tenant.openWriteKey).send({ batch: events });
  const order = (properties: Record<string, unknown>, context: Record<string, unknown> = {}) =>
    event({ event: 'Order Completed', properties, messageId: `order-${randomUUID()}`, context });
  /** The committed event of each message id, read back from the topic (bounded wait). */
  async function committed(messageIds: string[]): Promise<CommittedEvent[]> {
    let found: CommittedEvent[] = [];
    await waitUntil(`${messageIds.length} events committed`, async () => {
      const all = await h.readTopic();
      found = messageIds
        .map((id) => all.find((c) => c.event.messageId === id))
        .filter((c) => c !== undefined);
      return found.length === messageIds.length;
    });
    return found;
  }
  /** Sends `probe` until its committed verdict satisfies `ready` (a binding's change heard). */
  async function until(
    tenant: HostedTenant,
    ready: (c: CommittedEvent) => boolean,
    probe = () => order({ order_id: 'o-probe' }),
  ) {
    await waitUntil(
      'the binding heard',
      async () => {
        const sent = probe();
        expect((await send(tenant, [sent])).status).toBe(202);
        const [c] = await committed([sent.messageId as string]);
        return c !== undefined && ready(c);
      },
      10_000,
    );
  }

  it('answers 202 as without a plan and commits exactly one missing_required violation, version 1', async () => {
    const tenant = h.tenants.a;
    // Without a plan first: the answer to compare with, and no plan or verdict in the record.
    const before = order({});
    const unplanned = await send(tenant, [before]);
    expect(unplanned.status).toBe(202);
    const [plain] = await committed([before.messageId as string]);
    expect(plain?.plan).toBeUndefined();
    expect(plain?.verdict).toBeUndefined();

    const planId = await publishedPlan(tenant, orderPlan(['order_id']));
    await bind(tenant, planId);
    await until(tenant, (c) => c.plan?.planId === planId);

    const violationsBefore = await sample(
      h.metrics,
      'pipeline_ingestion_plan_violations_total{code="missing_required"}',
    );
    const sent = order({});
    const answer = await send(tenant, [sent]);
    expect(answer.status).toBe(202);
    const strip = (body: Record<string, unknown>) => ({ ...body, batchId: undefined });
    expect(strip(answer.body)).toEqual(strip(unplanned.body));
    const [c] = await committed([sent.messageId as string]);
    expect(c?.plan).toEqual({ planId, version: 1, policy });
    expect(c?.verdict).toEqual({
      version: 1,
      violations: [
        {
          code: 'missing_required',
          path: '/properties/order_id',
          keyword: 'required',
          message: '/properties/order_id is required',
          ruleVersion: 1,
        },
      ],
    });
    expect(await sample(h.metrics, 'pipeline_ingestion_plan_violations_total{code="missing_required"}')).toBe(
      violationsBefore + 1,
    );
    expect(await sample(h.metrics, 'pipeline_ingestion_plan_compile_duration_seconds_count')).toBeGreaterThan(
      0,
    );

    // The live debugger shows the event's plan version and violation.
    const redis = h.debugRedis as RedisClient;
    const shown = await waitUntil('the event recorded', async () => {
      const entries = (await redis.xrange(debuggerKeys.events(tenant.openWriteKeyId), '-', '+')) as [
        string,
        string[],
      ][];
      return entries
        .map(([, fields]) => JSON.parse(fields[1] as string) as DebugEventRecord)
        .find((r) => r.messageId === sent.messageId);
    });
    expect(shown).toMatchObject({
      status: 'accepted',
      plan: { planId, version: 1 },
      violations: [{ code: 'missing_required', path: '/properties/order_id' }],
    });
    // And the action the binding's policy takes, as the consumers decide it.
    expect(shown?.planAction).toEqual({
      action: 'quarantine',
      omitted: [],
      destinations: { warehouse: { action: 'allow', omitted: [] } },
    });
  }, 60_000);

  it('holds an event pinned to v1 by RudderTyper to v1 after v2, and the others to v2', async () => {
    const tenant = h.tenants.b;
    const planId = await publishedPlan(tenant, orderPlan(['order_id']));
    await bind(tenant, planId);
    await until(tenant, (c) => c.plan?.planId === planId);
    await publish(tenant, planId, orderPlan(['order_id', 'subtotal']));
    await until(tenant, (c) => c.plan?.version === 2);

    const pin = (version: unknown, trackingPlanId = planId) => ({
      ruddertyper: { trackingPlanId, trackingPlanVersion: version },
    });
    const events = [
      order({ order_id: 'o-1' }, pin(1)),
      order({ order_id: 'o-1' }),
      order({ order_id: 'o-1' }, pin(9)),
      order({ order_id: 'o-1' }, pin(1, randomUUID())),
    ];
    expect((await send(tenant, events)).status).toBe(202);
    const found = await committed(events.map((e) => e.messageId as string));
    expect(
      found.map((c) => [
        c.plan?.version,
        c.verdict?.version,
        c.verdict?.violations.map((v) => `${v.code} ${v.path}`),
      ]),
    ).toEqual([
      [2, 1, []],
      [2, 2, ['missing_required /properties/subtotal']],
      [
        2,
        2,
        [
          'unknown_pinned_version /context/ruddertyper/trackingPlanVersion',
          'missing_required /properties/subtotal',
        ],
      ],
      [2, 2, ['missing_required /properties/subtotal']],
    ]);
  }, 60_000);

  it('gives two accounts with the same event name and different schemas their own verdicts', async () => {
    // a is bound to a plan requiring order_id (first test), b now to one requiring subtotal only.
    const planB = await publishedPlan(h.tenants.b, orderPlan(['subtotal']));
    await bind(h.tenants.b, planB);
    await until(h.tenants.b, (c) => c.plan?.planId === planB);
    const same = () => order({ order_id: 'o-7' });
    const [ea, eb] = [same(), same()];
    expect((await send(h.tenants.a, [ea])).status).toBe(202);
    expect((await send(h.tenants.b, [eb])).status).toBe(202);
    const [ca, cb] = await committed([ea.messageId as string, eb.messageId as string]);
    expect(ca?.accountId).toBe(h.tenants.a.accountId);
    expect(ca?.verdict).toEqual({ version: 1, violations: [] });
    expect(cb?.accountId).toBe(h.tenants.b.accountId);
    expect(cb?.plan?.planId).toBe(planB);
    expect(cb?.verdict?.violations.map((v) => `${v.code} ${v.path}`)).toEqual([
      'missing_required /properties/subtotal',
    ]);
  }, 60_000);

  it('counts each account’s violations in its own buckets, with samples, for the violations API', async () => {
    // b is bound (previous test) to a plan requiring subtotal; a to one requiring order_id.
    const redis = h.debugRedis as RedisClient;
    const hourOf = (at: number) => Math.floor(at / 3_600_000) * 3_600_000;
    const subtotalCount = async (accountId: string) => {
      const now = Date.now();
      // This hour's and the last one's: a test running across the hour still counts all.
      const buckets = await readViolationBuckets(redis, accountId, 'hour', hourOf(now) - 3_600_000, now);
      let total = 0;
      for (const bucket of buckets)
        for (const { key, count } of bucket.counts)
          if (key.code === 'missing_required' && key.path === '/properties/subtotal') total += count;
      return total;
    };
    const [beforeA, beforeB] = [
      await subtotalCount(h.tenants.a.accountId),
      await subtotalCount(h.tenants.b.accountId),
    ];
    const events = Array.from({ length: 7 }, () => order({ order_id: 'o-8' }));
    expect((await send(h.tenants.b, events)).status).toBe(202);
    await waitUntil(
      'b’s 7 violations counted',
      async () => (await subtotalCount(h.tenants.b.accountId)) === beforeB + 7,
    );
    expect(await subtotalCount(h.tenants.a.accountId)).toBe(beforeA);
    const key = {
      planId: (await committed([events[0]!.messageId as string]))[0]!.plan!.planId,
      version: 1,
      writeKeyId: h.tenants.b.openWriteKeyId,
      eventType: 'track',
      eventName: 'Order Completed',
      code: 'missing_required',
      path: '/properties/subtotal',
    };
    const samples = [...(await readViolationSamples(redis, h.tenants.b.accountId, [key], 5)).values()][0];
    expect(samples?.length).toBeGreaterThanOrEqual(1);
    expect(samples?.[0]).toMatchObject({ message: '/properties/subtotal is required' });
    expect(samples?.[0]?.payload).toMatchObject({
      event: 'Order Completed',
      properties: { order_id: expect.any(String) },
    });
    expect(await sample(h.metrics, 'pipeline_ingestion_violation_counts_total{result="failed"}')).toBe(0);
  }, 60_000);

  it('accepts and commits with version null when the control plane cannot be asked for the plan', async () => {
    // An instance whose plan reads go to a closed port: the control plane down for them alone.
    const down = await h.startInstance({ trackingPlanUrl: 'http://127.0.0.1:1', planRetryAfterMs: 60_000 });
    const events = [order({}), order({ order_id: 'o-2' })];
    const answer = await send(h.tenants.a, events, down.app);
    expect(answer.status).toBe(202);
    expect(answer.body).toMatchObject({ accepted: true, received: 2, invalid: 0 });
    const found = await committed(events.map((e) => e.messageId as string));
    for (const c of found) {
      expect(c.plan?.version).toBe(1);
      expect(c.verdict).toEqual({ version: null, violations: [] });
    }
    expect(await sample(down.metrics, 'pipeline_ingestion_plan_unavailable_total')).toBe(2);
  }, 60_000);

  it('finds through the door what compilePlan finds, for full-Unicode keys and values', async () => {
    const plan: TrackingPlan = {
      rules: [
        {
          type: 'track',
          name: 'Ünïcödé 🚀 Event',
          schema: {
            properties: {
              properties: {
                type: 'object',
                required: ['order_id', 'ключ 🔑'],
                additionalProperties: { type: ['string', 'number'], maxLength: 12 },
                properties: { order_id: { type: 'string', maxLength: 8 }, 'ключ 🔑': { enum: ['да', '😀'] } },
              },
            },
          },
        },
      ],
    };
    const tenant = h.tenants.a;
    const planId = await publishedPlan(tenant, plan);
    await bind(tenant, planId);
    const probe = () => event({ event: 'Ünïcödé 🚀 Event', messageId: `u-${randomUUID()}`, properties: {} });
    await until(tenant, (c) => c.plan?.planId === planId, probe);
    const direct = compilePlan(plan, { planId, version: 1 });

    const sent: Record<string, unknown>[] = [];
    const value = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 16 }),
      fc.integer(),
      fc.boolean(),
      fc.constant(null),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string({ unit: 'binary', minLength: 1, maxLength: 10 }), value, { maxKeys: 6 }),
        async (properties) => {
          const e = event({ event: 'Ünïcödé 🚀 Event', messageId: `u-${randomUUID()}`, properties });
          const answer = await send(tenant, [e]);
          expect(answer.status).toBe(202);
          if (answer.body.invalid === 0) sent.push(e);
        },
      ),
      { numRuns: 40 },
    );
    // Most generated events pass the tracking API's own contract.
    expect(sent.length).toBeGreaterThan(20);
    const found = await committed(sent.map((e) => e.messageId as string));
    for (const [i, c] of found.entries()) {
      // The event committed is the one sent, NUL and unpaired surrogates made U+FFFD as the
      // tracking API makes them (event-content.ts) before the door sees it; its verdict compilePlan's.
      const clean = (text: string) => text.toWellFormed().split('\u0000').join('\uFFFD');
      const cleaned = Object.fromEntries(
        Object.entries(sent[i]?.properties as Record<string, unknown>).map(([k, v]) => [
          clean(k),
          typeof v === 'string' ? clean(v) : v,
        ]),
      );
      expect(c.event.properties).toEqual(cleaned);
      expect(c.verdict).toEqual({
        version: 1,
        violations: direct.validate(
          c.event as unknown as Record<string, unknown>,
          ruleVersionPin(c.event as TrackingEvent),
        ),
      });
    }
  }, 120_000);
});
