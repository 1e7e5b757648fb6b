import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { QuarantineStack } from '@pipeline/control-plane/testing/quarantine-stack';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import type { TrackingPlanPreview } from '@pipeline/control-plane/tracking-plans/tracking-plan.dto';
import type { PlanViolationsColumn } from '@pipeline/destinations';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import type { PlanPolicy, TrackingPlan, Violation } from '@pipeline/tracking-plans';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

// The preview's promise (docs/tracking-plans.md, "Plans from traffic"): its counts per code and
// per action are what the draft, published and bound with the same policy, does to the same
// events at the warehouse. Both sides are the real pipeline: events sent through hosted
// ingestion to real Kafka, stored by the real warehouse consumer in a PostgreSQL warehouse,
// quarantined into its real dead-letter topic and indexed. The preview reads the stored events
// (the warehouse destination); the same events sent again after publishing are counted from
// what the consumer stored (its plan_violations column) and what it quarantined.

const policy: PlanPolicy = {
  actions: {
    unplanned_event: 'quarantine',
    missing_required: 'quarantine',
    unplanned_property: 'omit',
    wrong_value: 'allow',
  },
};
const plan: TrackingPlan = {
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        type: 'object',
        properties: {
          properties: {
            type: 'object',
            required: ['order_id'],
            additionalProperties: false,
            properties: {
              order_id: { type: 'string' },
              total: { type: 'number' },
              currency: { enum: ['USD', 'EUR'] },
            },
          },
        },
      },
    },
    { type: 'page', name: 'Home', schema: { type: 'object' } },
    {
      type: 'identify',
      schema: {
        type: 'object',
        properties: { traits: { type: 'object', properties: { email: { type: 'string' } } } },
      },
    },
  ],
};

/** Every action and every violation class, several times over (messageIds set per send). */
const seed: Record<string, unknown>[] = [
  ...[1, 2, 3].map((n) => ({ event: 'Order Completed', properties: { order_id: `o-${n}`, total: n } })),
  { event: 'Order Completed', properties: { total: 4 } },
  { event: 'Order Completed', properties: {} },
  { event: 'Order Completed', properties: { order_id: 6 } },
  { event: 'Order Completed', properties: { order_id: 'o-7', currency: 'JPY' } },
  { event: 'Order Completed', properties: { order_id: 'o-8', coupon: 'SAVE' } },
  { event: 'Order Completed', properties: { order_id: 'o-9', coupon: 'SAVE', gift: true } },
  { event: 'Order Completed', properties: { coupon: 'SAVE' } },
  { event: 'Cart Viewed', properties: { cart_id: 'c-1' } },
  { event: 'Cart Viewed', properties: { cart_id: 'c-2' } },
  { type: 'page', name: 'Home', properties: { path: '/' } },
  { type: 'page', name: 'Pricing', properties: { path: '/pricing' } },
  { type: 'identify', userId: 'u-1', traits: { email: 'a@x.io' } },
  { type: 'identify', userId: 'u-2', traits: { email: 42 } },
];

interface Tally {
  actions: Record<'allow' | 'omit' | 'quarantine', number>;
  codes: Record<string, number>;
}

describe('a draft’s preview against publishing it (real ingestion, Kafka, warehouse and consumer)', () => {
  let h: Hosted;
  let stack: QuarantineStack;
  let warehouse: Client;

  beforeAll(async () => {
    h = await startHosted('plan preview', { tenantChanges: true, backstopEps: 1_000_000 });
    await waitUntil('tenant changes heard', async () => h.tenantChanges?.live);
    const warehouseUrl = h.controlPlane.ownWarehouseUrl;
    if (!warehouseUrl) throw new Error('the control plane reads no warehouse of its own');
    stack = new QuarantineStack({ source: h.topic });
    await stack.start(h.controlPlane, warehouseUrl);
    warehouse = new Client({ connectionString: warehouseUrl });
    await warehouse.connect();
  }, 120_000);
  afterAll(async () => {
    await warehouse?.end();
    await stack?.stop();
    await h?.close();
  });

  const tenant = () => h.tenants.a;
  const api = () => h.controlPlane.as(tenant().apiKey);
  /** Sends the seed through ingestion, each event with a new message id; answers the ids. */
  async function send(label: string): Promise<string[]> {
    const events = seed.map((fields) => event({ ...fields, messageId: `${label}-${randomUUID()}` }));
    const answer = await collect(h.app).set('X-Write-Key', tenant().openWriteKey).send({ batch: events });
    expect(answer.status).toBe(202);
    return events.map((e) => e.messageId as string);
  }
  /** The warehouse's stored rows of `messageIds`, with their plan_violations column. */
  async function stored(messageIds: string[]): Promise<(PlanViolationsColumn | null)[]> {
    const schema = warehouseSchemaFor(tenant().accountId);
    const rows: (PlanViolationsColumn | null)[] = [];
    for (const table of ['events', 'users', 'groups', 'aliases']) {
      const found = await warehouse
        .query<{ plan_violations: PlanViolationsColumn | null }>(
          `SELECT plan_violations FROM "${schema}"."${table}" WHERE message_id = ANY($1)`,
          [messageIds],
        )
        .catch(() => ({ rows: [] }));
      rows.push(...found.rows.map((r) => r.plan_violations));
    }
    return rows;
  }
  async function quarantined(planId: string, messageIds: string[]): Promise<Violation[][]> {
    const answer = await api().get(`/api/v1/quarantine?planId=${planId}&limit=100`);
    expect(answer.status).toBe(200);
    const wanted = new Set(messageIds);
    return (answer.body.data as { messageId: string; violations: Violation[] }[])
      .filter((q) => wanted.has(q.messageId))
      .map((q) => q.violations);
  }

  it('counts per code and per action equal those of publishing the draft and sending the events again', async () => {
    // No plan bound: every event is stored, the preview's material.
    const first = await send('before');
    await waitUntil('the seed stored', async () => (await stored(first)).length === seed.length, 20_000);

    const created = await api().post('/api/v1/tracking-plans').send({ name: 'Previewed', plan });
    expect(created.status).toBe(201);
    const planId = (created.body.data as { id: string }).id;
    const previewed = await api().post(`/api/v1/tracking-plans/${planId}/preview`).send({ policy });
    expect(previewed.status).toBe(200);
    const preview = previewed.body.data as TrackingPlanPreview;
    expect(preview.checked).toBe(seed.length);
    // The seed's known answer (see it above), so the comparison below is not one of zeros.
    expect(preview.actions).toEqual({ allow: 8, omit: 2, quarantine: 6 });
    expect(preview.codes).toEqual({
      missing_required: 3,
      type_mismatch: 2,
      value_not_allowed: 1,
      unplanned_property: 4,
      unplanned_event: 3,
    });

    // Published and bound with the same policy: the door checks, the consumer acts.
    expect((await api().post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
    const bound = await api()
      .put(`/api/v1/write-keys/${tenant().openWriteKeyId}/tracking-plan`)
      .send({ planId, version: 'latest', policy });
    expect(bound.status).toBe(200);
    await waitUntil(
      'the binding heard',
      async () => {
        const probe = event({ messageId: `probe-${randomUUID()}` });
        await collect(h.app)
          .set('X-Write-Key', tenant().openWriteKey)
          .send({ batch: [probe] });
        const committed = await h.readTopic();
        return committed.some((c) => c.event.messageId === probe.messageId && c.plan?.planId === planId);
      },
      15_000,
    );

    const again = await send('again');
    let rows: (PlanViolationsColumn | null)[] = [];
    let held: Violation[][] = [];
    await waitUntil(
      'every event stored or quarantined',
      async () => {
        rows = await stored(again);
        held = await quarantined(planId, again);
        return rows.length + held.length === seed.length;
      },
      30_000,
    );
    const tally: Tally = { actions: { allow: 0, omit: 0, quarantine: held.length }, codes: {} };
    const count = (violations: readonly Violation[]) => {
      for (const v of violations) tally.codes[v.code] = (tally.codes[v.code] ?? 0) + 1;
    };
    for (const row of rows) {
      tally.actions[row?.action ?? 'allow'] += 1;
      count(row?.violations ?? []);
    }
    for (const violations of held) count(violations);

    expect(tally.actions).toEqual(preview.actions);
    expect(tally.codes).toEqual(preview.codes);
  }, 120_000);
});
