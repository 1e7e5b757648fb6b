import { normalizeEvent, type TrackingEvent, type WarehouseRow } from '@pipeline/events';
import {
  compilePlan,
  decideEvent,
  ruleVersionPin,
  type PlanPolicy,
  type TrackingPlan,
} from '@pipeline/tracking-plans';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import type { GeneratedTrackingPlan, PreviewEventView, TrackingPlanPreview } from './tracking-plan.dto';

// Plans from traffic against a real control plane and a real PostgreSQL warehouse: rows are
// written by the production normalizer and writer, so the draft is inferred from exactly what
// the warehouse consumer stores, and the events the test made are the reference the
// reconstructed ones are held to.

const day = 86_400_000;
const now = Date.now();
const at = (msAgo: number) => new Date(now - msAgo);

let sequence = 0;
function track(name: string, properties: Record<string, unknown>, when: Date): TrackingEvent {
  sequence += 1;
  return {
    type: 'track',
    event: name,
    properties,
    messageId: `m-${sequence}`,
    anonymousId: `a-${sequence % 4}`,
    timestamp: when.toISOString(),
    context: {
      library: { name: 'analytics.js', version: '1.0.0' },
      page: { path: '/checkout' },
      app: { build: 7 },
    },
  } as TrackingEvent;
}

const rowOf = (event: TrackingEvent): WarehouseRow =>
  normalizeEvent(event, { receivedAt: new Date(event.timestamp), ip: null, userAgent: null });

// Known shapes: order_id always there (12 distinct strings: more than the enum limit),
// subtotal in 8 of 12 (whole and fractional numbers), coupon an int in 3 and a string in 3,
// currency one of three values in every row.
const currencies = ['USD', 'EUR', 'GBP'];
const orders = Array.from({ length: 12 }, (_, i) => {
  const properties: Record<string, unknown> = { order_id: `o-${i + 1}`, currency: currencies[i % 3] };
  if (i < 8) properties.subtotal = i % 2 === 0 ? i * 10 : i + 0.5;
  if (i >= 6) properties.coupon = i % 2 === 0 ? 10 * i : `SAVE${i}`;
  return track('Order Completed', properties, at(2 * day + i * 60_000));
});
const signups = [
  track('Signed Up', { plan: 'free', referrer: null }, at(day)),
  track('Signed Up', { plan: 'pro', referrer: 'ads' }, at(day + 1000)),
];
const pages: TrackingEvent[] = [
  {
    type: 'page',
    name: 'Home',
    properties: { path: '/' },
    messageId: 'p-1',
    anonymousId: 'a-1',
    timestamp: at(3 * day).toISOString(),
  },
  {
    type: 'page',
    name: 'Home',
    properties: { path: '/' },
    messageId: 'p-2',
    anonymousId: 'a-2',
    timestamp: at(3 * day + 5).toISOString(),
  },
  {
    type: 'page',
    properties: { path: '/x', tags: ['a'] },
    messageId: 'p-3',
    anonymousId: 'a-3',
    timestamp: at(3 * day + 9).toISOString(),
  },
] as TrackingEvent[];
const identifies: TrackingEvent[] = [
  {
    type: 'identify',
    userId: 'u-1',
    traits: { email: 'a@x.io', age: 30 },
    messageId: 'i-1',
    timestamp: at(4 * day).toISOString(),
  },
  {
    type: 'identify',
    userId: 'u-2',
    traits: { email: 'b@x.io', vip: true },
    messageId: 'i-2',
    timestamp: at(4 * day + 1).toISOString(),
  },
] as TrackingEvent[];
const groups: TrackingEvent[] = [
  {
    type: 'group',
    userId: 'u-1',
    groupId: 'g-1',
    traits: { tier: 'gold', seats: 5 },
    messageId: 'g-1',
    timestamp: at(5 * day).toISOString(),
  },
] as TrackingEvent[];
/** Outside a 7-day window: never read. */
const old = track('Order Completed', { order_id: 42, legacy: true }, at(10 * day));
const inWindow = [...orders, ...signups, ...pages, ...identifies, ...groups];

const iso = (event: TrackingEvent) => new Date(event.timestamp).toISOString();

describe('tracking plans from traffic (real PostgreSQL warehouse)', () => {
  let scratch: ScratchWarehouse;
  let h: Harness;
  let tenant: Tenant;

  beforeAll(async () => {
    scratch = await startScratchWarehouse('plan traffic');
    h = await startHarness('plan traffic', { warehouse: scratch.warehouses, warehouseUrl: scratch.url });
    tenant = await h.tenant();
    await scratch.seed(tenant.accountId, [...inWindow, old].map(rowOf));
  }, 60_000);
  afterAll(async () => {
    await h.close();
    await scratch.drop();
  });

  const generate = (body: Record<string, unknown>, key = tenant.key) =>
    h.as(key).post('/api/v1/tracking-plans/generate').send(body);

  it('infers the seeded shapes exactly, and the seed data keeps to the draft', async () => {
    const answer = await generate({ name: 'From traffic', days: 7 });
    expect(answer.status).toBe(201);
    const data = answer.body.data as GeneratedTrackingPlan;
    const expectedPlan: TrackingPlan = {
      rules: [
        {
          type: 'track',
          name: 'Order Completed',
          schema: {
            type: 'object',
            required: ['properties'],
            properties: {
              properties: {
                type: 'object',
                properties: {
                  coupon: {},
                  currency: { type: 'string', enum: ['EUR', 'GBP', 'USD'] },
                  order_id: { type: 'string' },
                  subtotal: { type: 'number' },
                },
                required: ['currency', 'order_id'],
                additionalProperties: false,
              },
            },
          },
        },
        {
          type: 'page',
          name: 'Home',
          schema: {
            type: 'object',
            required: ['properties'],
            properties: {
              properties: {
                type: 'object',
                properties: { path: { type: 'string', enum: ['/'] } },
                required: ['path'],
                additionalProperties: false,
              },
            },
          },
        },
        {
          type: 'track',
          name: 'Signed Up',
          schema: {
            type: 'object',
            required: ['properties'],
            properties: {
              properties: {
                type: 'object',
                properties: {
                  plan: { type: 'string', enum: ['free', 'pro'] },
                  referrer: { type: ['string', 'null'], enum: ['ads', null] },
                },
                required: ['plan', 'referrer'],
                additionalProperties: false,
              },
            },
          },
        },
        {
          type: 'page',
          schema: {
            type: 'object',
            required: ['properties'],
            properties: {
              properties: {
                type: 'object',
                properties: { path: { type: 'string', enum: ['/x'] }, tags: { type: 'array' } },
                required: ['path', 'tags'],
                additionalProperties: false,
              },
            },
          },
        },
        {
          type: 'identify',
          schema: {
            type: 'object',
            required: ['traits'],
            properties: {
              traits: {
                type: 'object',
                properties: {
                  age: { type: 'integer' },
                  email: { type: 'string', enum: ['a@x.io', 'b@x.io'] },
                  vip: { type: 'boolean' },
                },
                required: ['email'],
                additionalProperties: false,
              },
            },
          },
        },
        {
          type: 'group',
          schema: {
            type: 'object',
            required: ['traits'],
            properties: {
              traits: {
                type: 'object',
                properties: { seats: { type: 'integer' }, tier: { type: 'string', enum: ['gold'] } },
                required: ['seats', 'tier'],
                additionalProperties: false,
              },
            },
          },
        },
      ],
    };
    expect(data.plan.draft).toEqual(expectedPlan);
    expect(data.plan.latestVersion).toBeNull();
    expect(data.rules).toEqual(
      [
        {
          type: 'track',
          name: 'Order Completed',
          observedCount: 12,
          sampledCount: 12,
          firstSeen: iso(orders[0]!),
          lastSeen: iso(orders[11]!),
        },
        {
          type: 'page',
          name: 'Home',
          observedCount: 2,
          sampledCount: 2,
          firstSeen: iso(pages[0]!),
          lastSeen: iso(pages[1]!),
        },
        {
          type: 'track',
          name: 'Signed Up',
          observedCount: 2,
          sampledCount: 2,
          firstSeen: iso(signups[0]!),
          lastSeen: iso(signups[1]!),
        },
        {
          type: 'page',
          observedCount: 1,
          sampledCount: 1,
          firstSeen: iso(pages[2]!),
          lastSeen: iso(pages[2]!),
        },
        {
          type: 'identify',
          observedCount: 2,
          sampledCount: 2,
          firstSeen: iso(identifies[0]!),
          lastSeen: iso(identifies[1]!),
        },
        {
          type: 'group',
          observedCount: 1,
          sampledCount: 1,
          firstSeen: iso(groups[0]!),
          lastSeen: iso(groups[0]!),
        },
      ].map((rule) => {
        // Times grow with the offsets above: the first seen is the largest offset.
        const [first, last] = [rule.firstSeen, rule.lastSeen].sort();
        return { ...rule, firstSeen: first, lastSeen: last };
      }),
    );
    expect(data.flagged).toEqual([
      {
        type: 'track',
        name: 'Order Completed',
        path: '/properties/coupon',
        reason: 'mixed_types',
        types: { integer: 3, string: 3 },
      },
    ]);
    expect(data.truncated).toEqual({ names: false, profile: false });
    expect(data.window.days).toBe(7);

    // Round trip: every seeded event as it was sent keeps to the draft. The flagged coupon is
    // untyped, so it cannot be a violation either.
    const compiled = compilePlan(data.plan.draft, { planId: data.plan.id, version: 0 });
    for (const event of inWindow)
      expect([event.messageId, compiled.validate(event as never)]).toEqual([event.messageId, []]);
    // The event outside the window would not: order_id was a number then, and legacy unplanned.
    expect(new Set(compiled.validate(old as never).map((v) => `${v.code} ${v.path}`))).toEqual(
      new Set([
        'unplanned_property /properties/legacy',
        'type_mismatch /properties/order_id',
        'missing_required /properties/currency',
      ]),
    );
  });

  it('takes a lower required ratio and a lower enum limit', async () => {
    const answer = await generate({ name: 'Loose', days: 7, requiredRatio: 0.5, maxEnumValues: 2 });
    expect(answer.status).toBe(201);
    const draft = (answer.body.data as GeneratedTrackingPlan).plan.draft;
    const inner = (rule: number) =>
      (draft.rules[rule]!.schema.properties as Record<string, Record<string, unknown>>)[
        rule >= 4 ? 'traits' : 'properties'
      ];
    // subtotal is in 8 of 12 orders (>= 0.5), coupon in 6 of 12; currency has 3 values (> 2).
    expect(inner(0)).toEqual({
      type: 'object',
      properties: {
        coupon: {},
        currency: { type: 'string' },
        order_id: { type: 'string' },
        subtotal: { type: 'number' },
      },
      required: ['coupon', 'currency', 'order_id', 'subtotal'],
      additionalProperties: false,
    });
    // age and vip are each in 1 of 2 users; two emails are within the limit of 2.
    expect(inner(4)).toEqual({
      type: 'object',
      properties: {
        age: { type: 'integer' },
        email: { type: 'string', enum: ['a@x.io', 'b@x.io'] },
        vip: { type: 'boolean' },
      },
      required: ['age', 'email', 'vip'],
      additionalProperties: false,
    });
  });

  it('reads only the window: one day holds none of the seed', async () => {
    const answer = await generate({ name: 'One day', days: 1, maxEnumValues: 0 });
    expect(answer.status).toBe(201);
    const data = answer.body.data as GeneratedTrackingPlan;
    // The newest calls are the signups, 24 h before the seed: the window starts 24 h before
    // the request, which is later, so nothing is in it.
    expect(data.rules).toEqual([]);
    expect(data.plan.draft).toEqual({ rules: [] });
  });

  it('gives another account nothing of this account’s traffic', async () => {
    const other = await h.tenant();
    await scratch.createSchema(other.accountId);
    const answer = await generate({ name: 'Empty', days: 90 }, other.key);
    expect(answer.status).toBe(201);
    expect((answer.body.data as GeneratedTrackingPlan).plan.draft).toEqual({ rules: [] });
    // An account whose tables do not exist yet is answered the same.
    const fresh = await h.tenant();
    const none = await generate({ name: 'None', days: 90 }, fresh.key);
    expect([none.status, (none.body.data as GeneratedTrackingPlan).rules]).toEqual([201, []]);
  });

  it.each([
    [{ name: 'x', days: 0 }, 'body.days'],
    [{ name: 'x', days: 91 }, 'body.days'],
    [{ name: 'x', days: 1.5 }, 'body.days'],
    [{ name: 'x', requiredRatio: 0 }, 'body.requiredRatio'],
    [{ name: 'x', requiredRatio: 1.5 }, 'body.requiredRatio'],
    [{ name: 'x', maxEnumValues: 51 }, 'body.maxEnumValues'],
    [{ name: 'x', maxEnumValues: -1 }, 'body.maxEnumValues'],
    [{ name: '' }, 'body.name'],
    // The tables do not record the write key an event came with: no filter by key.
    [{ name: 'x', writeKeyId: '0b7c2e1a-5f1e-4a3b-9c8d-1e2f3a4b5c6d' }, 'body.writeKeyId'],
  ])('refuses %j with 400 validation_failed naming %s, creating nothing', async (body, field) => {
    const before = (await h.as(tenant.key).get('/api/v1/tracking-plans')).body.pagination.total as number;
    expect(before).toBeGreaterThan(0);
    const answer = await generate(body);
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe('validation_failed');
    expect(JSON.stringify(answer.body.errors)).toContain(field.replace('body.', ''));
    expect((await h.as(tenant.key).get('/api/v1/tracking-plans')).body.pagination.total).toBe(before);
  });

  // A stricter plan than the traffic: an unplanned event, unplanned members, wrong types and
  // values, a missing member and a common schema most calls miss.
  const strict: TrackingPlan = {
    common: { type: 'object', required: ['context'] },
    rules: [
      {
        type: 'track',
        name: 'Order Completed',
        schema: {
          type: 'object',
          required: ['properties'],
          properties: {
            properties: {
              type: 'object',
              required: ['order_id', 'subtotal'],
              additionalProperties: false,
              properties: {
                order_id: { type: 'string', pattern: '^o-[0-9]$' },
                subtotal: { type: 'number' },
                coupon: { type: 'string' },
                currency: { enum: ['USD', 'EUR'] },
              },
            },
          },
        },
      },
      {
        type: 'identify',
        schema: {
          properties: {
            traits: {
              type: 'object',
              required: ['email'],
              additionalProperties: false,
              properties: { email: { type: 'string' } },
            },
          },
        },
      },
    ],
  };
  const policy: PlanPolicy = {
    actions: { unplanned_event: 'quarantine', wrong_value: 'quarantine', unplanned_property: 'omit' },
    destinations: { warehouse: { wrong_value: 'omit' } },
  };

  /** What compilePlan and decideEvent say of the seeded events, one by one. */
  function expected(plan: TrackingPlan, decidedBy: PlanPolicy) {
    const compiled = compilePlan(plan, { planId: 'p', version: 1 });
    const actions = { allow: 0, omit: 0, quarantine: 0 };
    const codes: Record<string, number> = {};
    const events = new Map<string, PreviewEventView>();
    let withViolations = 0;
    for (const event of inWindow) {
      const e = event as unknown as Record<string, unknown>;
      const name =
        e.type === 'track'
          ? (e.event as string)
          : e.type === 'page'
            ? ((e.name as string | undefined) ?? null)
            : null;
      const key = JSON.stringify([e.type, name]);
      const view = events.get(key) ?? {
        type: e.type as PreviewEventView['type'],
        name,
        observed: 0,
        checked: 0,
        withViolations: 0,
        actions: { allow: 0, omit: 0, quarantine: 0 },
        codes: {},
      };
      events.set(key, view);
      const violations = compiled.validate(e, ruleVersionPin(e));
      const { action } = decideEvent(violations, decidedBy, 'warehouse');
      view.observed += 1;
      view.checked += 1;
      actions[action] += 1;
      view.actions[action] += 1;
      if (violations.length > 0) {
        withViolations += 1;
        view.withViolations += 1;
      }
      for (const v of violations) {
        codes[v.code] = (codes[v.code] ?? 0) + 1;
        view.codes[v.code] = (view.codes[v.code] ?? 0) + 1;
      }
    }
    return { actions, codes, withViolations, events: [...events.values()] };
  }

  const byTypeAndName = (a: PreviewEventView, b: PreviewEventView) =>
    JSON.stringify([a.type, a.name]) < JSON.stringify([b.type, b.name]) ? -1 : 1;

  describe('preview', () => {
    let planId: string;
    let draftBefore: unknown;
    beforeAll(async () => {
      const created = await h
        .as(tenant.key)
        .post('/api/v1/tracking-plans')
        .send({ name: 'Strict', plan: strict });
      expect(created.status).toBe(201);
      planId = created.body.data.id as string;
      draftBefore = created.body.data;
    });
    const preview = (body: Record<string, unknown>, id = planId, key = tenant.key) =>
      h.as(key).post(`/api/v1/tracking-plans/${id}/preview`).send(body);

    it('counts what the draft would have done, as compilePlan and decideEvent do one by one', async () => {
      const answer = await preview({ days: 7, policy });
      expect(answer.status).toBe(200);
      const data = answer.body.data as TrackingPlanPreview;
      const want = expected(strict, policy);
      expect(data.version).toBeNull();
      expect(data.policySource).toBe('body');
      expect([data.observed, data.checked]).toEqual([inWindow.length, inWindow.length]);
      expect(data.actions).toEqual(want.actions);
      expect(data.codes).toEqual(want.codes);
      expect(data.withViolations).toBe(want.withViolations);
      expect([...data.events].sort(byTypeAndName)).toEqual(want.events.sort(byTypeAndName));
      // The numbers themselves, so that a change to both sides is seen. Orders: o-10 to o-12
      // break the pattern, 4 send GBP, 3 an integer coupon (7 orders omitted in all), 4 lack
      // subtotal (allowed). 2 signups are unplanned (quarantined). The 2 identifies have an
      // unplanned trait (omitted); they, 3 pages and a group lack context (common, allowed).
      expect(data.actions).toEqual({ allow: 9, omit: 9, quarantine: 2 });
      expect(data.codes).toEqual({
        common_schema: 6,
        missing_required: 4,
        type_mismatch: 3,
        unplanned_event: 2,
        unplanned_property: 2,
        value_not_allowed: 7,
      });
      expect(data.samples).toHaveLength(Math.min(20, want.withViolations));
      // Each sample is a seeded call with the violations compilePlan gives it (in another order
      // at times: jsonb keeps an object's keys in its own order, not the order sent).
      const sorted = (list: readonly object[]) => list.map((v) => JSON.stringify(v)).sort();
      const compiled = compilePlan(strict, { planId, version: 1 });
      for (const sample of data.samples) {
        const sent = inWindow.find((e) => e.messageId === sample.messageId) as unknown as Record<
          string,
          unknown
        >;
        expect(sorted(sample.violations)).toEqual(sorted(compiled.validate(sent)));
        expect(sample.violations.length).toBeGreaterThan(0);
      }
      // Nothing changed.
      expect((await h.as(tenant.key).get(`/api/v1/tracking-plans/${planId}`)).body.data).toEqual(draftBefore);
    });

    it('takes a published version and the policy of a write key’s binding', async () => {
      expect((await h.as(tenant.key).post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
      const key = (await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data
        .id as string;
      const bound = await h
        .as(tenant.key)
        .put(`/api/v1/write-keys/${key}/tracking-plan`)
        .send({ planId, version: 1, policy });
      expect(bound.status).toBe(200);
      // The draft moves on: the version, not the draft, is what is checked.
      expect(
        (await h.as(tenant.key).put(`/api/v1/tracking-plans/${planId}/draft`).send({ rules: [] })).status,
      ).toBe(200);
      const answer = await preview({ days: 7, version: 1, writeKeyId: key });
      expect(answer.status).toBe(200);
      const data = answer.body.data as TrackingPlanPreview;
      expect([data.version, data.policySource, data.policy]).toEqual([1, 'binding', policy]);
      expect(data.actions).toEqual(expected(strict, policy).actions);
      // Without a policy every class is allow; the draft now has no rules, so each of the 14
      // track calls is unplanned and nothing else is checked.
      const open = (await preview({})).body.data as TrackingPlanPreview;
      expect([open.policySource, open.actions, open.codes]).toEqual([
        'default',
        { allow: inWindow.length, omit: 0, quarantine: 0 },
        { unplanned_event: 14 },
      ]);
    });

    it('answers bad input with its documented code', async () => {
      const other = await h.tenant();
      const theirs = (await h.as(other.key).post('/api/v1/tracking-plans').send({ name: 'Theirs' })).body.data
        .id as string;
      const unbound = (await h.as(tenant.key).post('/api/v1/write-keys').send({ name: 'unbound' })).body.data
        .id as string;
      const cases: [Record<string, unknown>, string, number, string][] = [
        [{ days: 0 }, planId, 400, 'validation_failed'],
        [{ days: 91 }, planId, 400, 'validation_failed'],
        [{ version: 0 }, planId, 400, 'validation_failed'],
        [{}, '6a0f6c1e-93f5-4c55-8d8a-2d1e0f3b7a10', 404, 'not_found'],
        [{}, 'not-a-uuid', 404, 'not_found'],
        [{}, theirs, 404, 'not_found'],
        [{ version: 99 }, planId, 404, 'tracking_plan_version_not_found'],
        [{ writeKeyId: unbound }, planId, 404, 'tracking_plan_binding_not_found'],
        [{ policy: { actions: { unplanned_event: 'omit' } } }, planId, 422, 'invalid_policy'],
      ];
      for (const [body, id, status, code] of cases) {
        const answer = await preview(body, id);
        expect([JSON.stringify(body), id, answer.status, answer.body.code]).toEqual([
          JSON.stringify(body),
          id,
          status,
          code,
        ]);
      }
      const reader = await tenant.keyWith(['tracking_plans.read']);
      expect((await preview({}, planId, reader)).status).toBe(200);
      const none = await tenant.keyWith(['write_keys.read']);
      expect((await preview({}, planId, none)).status).toBe(403);
    });
  });

  it('needs tracking_plans.write', async () => {
    const reader = await tenant.keyWith(['tracking_plans.read']);
    expect((await generate({ name: 'x' }, reader)).status).toBe(403);
  });
});

describe('tracking plans from traffic on a ClickHouse warehouse', () => {
  let h: Harness;
  const asked: string[] = [];
  beforeAll(async () => {
    // Only where the account is placed is told: the refusal comes before any query.
    const clickhouse: AccountWarehouses = {
      locate: async (accountId) => ({
        engine: new Proxy({ engine: 'clickhouse' } as Record<string, unknown>, {
          get: (target, key) => {
            if (key === 'engine' || key === 'then') return target[key as string];
            asked.push(String(key));
            throw new Error(`asked ${String(key)}`);
          },
        }) as never,
        account: { accountId, schema: `account_${accountId.replace(/-/g, '')}` },
        owner: 'platform',
      }),
    };
    h = await startHarness('plan traffic clickhouse', { warehouse: clickhouse });
  }, 60_000);
  afterAll(() => h.close());

  it('answers 409 warehouse_engine_unsupported to generate and preview, asking the warehouse nothing', async () => {
    const tenant = await h.tenant();
    const generated = await h.as(tenant.key).post('/api/v1/tracking-plans/generate').send({ name: 'x' });
    expect([generated.status, generated.body.code]).toEqual([409, 'warehouse_engine_unsupported']);
    expect((await h.as(tenant.key).get('/api/v1/tracking-plans')).body.pagination.total).toBe(0);
    const plan = await h.as(tenant.key).post('/api/v1/tracking-plans').send({ name: 'p' });
    const previewed = await h
      .as(tenant.key)
      .post(`/api/v1/tracking-plans/${plan.body.data.id}/preview`)
      .send({});
    expect([previewed.status, previewed.body.code]).toEqual([409, 'warehouse_engine_unsupported']);
    expect(asked).toEqual([]);
  });
});
