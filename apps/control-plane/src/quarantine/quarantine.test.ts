import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import type { TrackingEvent } from '@pipeline/events';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import type { PlanPolicy, TrackingPlan } from '@pipeline/tracking-plans';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { QuarantineStack, quarantineTestLimits } from '../testing/quarantine-stack';
import { waitUntil } from '../testing/wait';

// The quarantine end to end on real Kafka and PostgreSQL: the warehouse consumer quarantines
// events under a plan's policy into its real dead-letter topic, the real index keeps them, the
// API lists them, and a replay checks them again against a published version and puts those
// that pass back in the real retry topic, from which the same consumer stores them.

const strict: TrackingPlan = {
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
            properties: { order_id: { type: 'string' }, total: { type: 'number' } },
          },
        },
      },
    },
  ],
};
/** v2: order_id is no longer required. */
const relaxed: TrackingPlan = {
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        type: 'object',
        properties: {
          properties: {
            type: 'object',
            properties: { order_id: { type: 'string' }, total: { type: 'number' } },
          },
        },
      },
    },
  ],
};
const policy: PlanPolicy = { actions: { missing_required: 'quarantine', unplanned_event: 'quarantine' } };

interface QuarantinedView {
  id: string;
  messageId: string;
  destination: string;
  destinationId: string;
  planId: string;
  planVersion: number | null;
  type: string;
  name: string | null;
  codes: string[];
  violations: { code: string; path: string }[];
  status: string;
  replayedVersion: number | null;
  deadLetterId: string;
}

describe('quarantine: list, replay against a version, discard (real Kafka and PostgreSQL)', () => {
  const stack = new QuarantineStack();
  let h: Harness;
  let warehouse: Client;
  let a: Tenant;
  let b: Tenant;
  let planId: string;

  const api = (tenant: Tenant) => h.as(tenant.key);
  const track = (properties: Record<string, unknown>, event = 'Order Completed'): TrackingEvent =>
    ({
      type: 'track',
      event,
      messageId: randomUUID(),
      anonymousId: 'anon-1',
      timestamp: '2026-11-29T10:00:00.000Z',
      properties,
    }) as TrackingEvent;

  /** Sends events to the outbox as the door would: checked against `version` of the plan. */
  const send = (tenant: Tenant, events: TrackingEvent[], version = 1) =>
    stack.send(tenant, events, { planId, version, plan: version === 1 ? strict : relaxed, policy });
  const stored = async (tenant: Tenant, messageIds: string[]) => {
    const schema = warehouseSchemaFor(tenant.accountId);
    try {
      const { rows } = await warehouse.query(
        `SELECT message_id, plan_violations FROM "${schema}".events WHERE message_id = ANY($1)`,
        [messageIds],
      );
      return rows as { message_id: string; plan_violations: unknown }[];
    } catch {
      return [];
    }
  };
  const listed = async (tenant: Tenant, query = '') => {
    const res = await api(tenant).get(`/api/v1/quarantine${query}`);
    expect(res.status).toBe(200);
    const body = res.body as { data: QuarantinedView[]; pagination: { total: number } };
    return { data: body.data, total: body.pagination.total };
  };

  beforeAll(async () => {
    h = await startHarness('quarantine', {
      deadLetterReplayer: stack.replayer,
      deadLetterOptions: { limits: quarantineTestLimits },
    });
    await stack.start(h);
    warehouse = new Client({ connectionString: h.db.url });
    await warehouse.connect();
    a = await h.tenant();
    b = await h.tenant();
    const created = await api(a).post('/api/v1/tracking-plans').send({ name: 'Orders', plan: strict });
    expect(created.status).toBe(201);
    planId = created.body.data.id as string;
    expect((await api(a).post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await stack.stop();
    await warehouse?.end();
    await h?.close();
  });

  it('holds what v1 refuses, keeps it under v1, replays it once under v2, and never again', async () => {
    const bad = Array.from({ length: 10 }, (_, n) => track({ total: n }));
    const good = track({ order_id: 'o-1', total: 1 });
    await send(a, [...bad, good]);
    const ids = bad.map((e) => e.messageId);
    await waitUntil('10 events quarantined', async () => (await listed(a, `?planId=${planId}`)).total === 10);
    expect(await stored(a, [good.messageId])).toEqual([
      { message_id: good.messageId, plan_violations: null },
    ]);
    expect(await stored(a, ids)).toEqual([]);

    const { data } = await listed(a, `?planId=${planId}&limit=100`);
    expect(data.map((q) => q.messageId).sort()).toEqual([...ids].sort());
    for (const q of data)
      expect(q).toMatchObject({
        destination: 'warehouse',
        destinationId: 'warehouse',
        planId,
        planVersion: 1,
        type: 'track',
        name: 'Order Completed',
        codes: ['missing_required'],
        violations: [{ code: 'missing_required', path: '/properties/order_id' }],
        status: 'quarantined',
      });
    const detail = await api(a).get(`/api/v1/quarantine/${data[0]?.id}`);
    expect(detail.status).toBe(200);
    expect(detail.body.event).toEqual(bad.find((e) => e.messageId === data[0]?.messageId));

    // Under the version that refused them, they stay.
    const underV1 = await api(a).post('/api/v1/quarantine/replay').send({ planId, version: 1 });
    expect([underV1.status, underV1.body]).toEqual([200, { replayed: 0, stillQuarantined: 10, skipped: 0 }]);
    expect((await listed(a, `?planId=${planId}`)).total).toBe(10);

    // v2 no longer requires order_id: the latest version lets them through, once.
    expect((await api(a).put(`/api/v1/tracking-plans/${planId}/draft`).send(relaxed)).status).toBe(200);
    expect((await api(a).post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
    const replayed = await api(a).post('/api/v1/quarantine/replay').send({ planId });
    expect([replayed.status, replayed.body]).toEqual([
      200,
      { replayed: 10, stillQuarantined: 0, skipped: 0 },
    ]);
    await waitUntil('10 replayed events stored', async () => (await stored(a, ids)).length === 10);
    expect((await stored(a, ids)).every((row) => row.plan_violations === null)).toBe(true);

    const again = await api(a).post('/api/v1/quarantine/replay').send({ planId });
    expect([again.status, again.body]).toEqual([200, { replayed: 0, stillQuarantined: 0, skipped: 0 }]);
    expect((await listed(a, `?planId=${planId}`)).total).toBe(0);
    const done = await listed(a, `?planId=${planId}&status=replayed&limit=100`);
    expect(done.total).toBe(10);
    expect(done.data.every((q) => q.replayedVersion === 2)).toBe(true);
    // Its dead letter is done too: the dead-letter list shows it replayed.
    const letters = await api(a).get(`/api/v1/dead-letters?status=replayed&reasonCode=plan_quarantined`);
    expect(letters.body.data.map((l: { id: string }) => l.id)).toContain(data[0]?.deadLetterId);
    // Each stored once: the warehouse holds one row per message id.
    expect(await stored(a, ids)).toHaveLength(10);
  }, 120_000);

  it('keeps what still fails in quarantine when part of a record passes, and discards on request', async () => {
    const passes = track({ total: 1 });
    const unplanned = track({ order_id: 'x' }, 'Order Complete');
    await send(a, [passes, unplanned]);
    await waitUntil(
      'the unplanned event quarantined',
      async () => (await listed(a, `?name=${encodeURIComponent('Order Complete')}`)).total === 1,
    );
    await waitUntil(
      'both events quarantined',
      async () => (await listed(a, `?planId=${planId}`)).total === 2,
    );
    const replay = await api(a).post('/api/v1/quarantine/replay').send({ planId });
    expect(replay.body).toEqual({ replayed: 1, stillQuarantined: 1, skipped: 0 });
    await waitUntil(
      'the passing event stored',
      async () => (await stored(a, [passes.messageId])).length === 1,
    );
    const [left] = (await listed(a, `?planId=${planId}`)).data;
    expect(left).toMatchObject({ messageId: unplanned.messageId, codes: ['unplanned_event'] });

    const discarded = await api(a)
      .post('/api/v1/quarantine/discard')
      .send({ ids: [left?.id] });
    expect([discarded.status, discarded.body]).toEqual([200, { discarded: 1, skipped: 0 }]);
    expect((await listed(a, `?planId=${planId}`)).total).toBe(0);
    expect((await listed(a, '?status=discarded')).data.map((q) => q.messageId)).toEqual([
      unplanned.messageId,
    ]);
    // Some of its events were replayed: the dead letter counts as replayed.
    const letters = await api(a).get(`/api/v1/dead-letters?status=replayed&reasonCode=plan_quarantined`);
    expect(letters.body.data.map((l: { id: string }) => l.id)).toContain(left?.deadLetterId);
    expect(await stored(a, [unplanned.messageId])).toEqual([]);
  }, 120_000);

  it('shows another account nothing of this one', async () => {
    const [mine] = (await listed(a, '?status=replayed')).data;
    expect((await listed(b, '?status=replayed')).total).toBe(0);
    expect((await api(b).get(`/api/v1/quarantine/${mine?.id}`)).status).toBe(404);
    const replay = await api(b)
      .post('/api/v1/quarantine/replay')
      .send({ ids: [mine?.id] });
    expect([replay.status, replay.body.code]).toEqual([404, 'quarantined_event_not_found']);
  });

  it('answers bad input with its documented code and changes nothing', async () => {
    const cases: [string, Record<string, unknown>, number, string][] = [
      ['/replay', {}, 400, 'quarantine_selector_required'],
      ['/discard', {}, 400, 'quarantine_selector_required'],
      ['/replay', { version: 1 }, 400, 'validation_failed'],
      ['/replay', { planId, code: 'nope' }, 400, 'validation_failed'],
      ['/replay', { planId, since: 'yesterday' }, 400, 'validation_failed'],
      ['/replay', { ids: ['not-a-uuid'] }, 400, 'validation_failed'],
      ['/replay', { planId, version: 99 }, 404, 'tracking_plan_version_not_found'],
      ['/discard', { ids: [randomUUID()] }, 404, 'quarantined_event_not_found'],
    ];
    for (const [path, body, status, code] of cases) {
      const res = await api(a).post(`/api/v1/quarantine${path}`).send(body);
      expect([path, body, res.status, res.body.code]).toEqual([path, body, status, code]);
    }
    expect((await api(a).get('/api/v1/quarantine?status=held')).status).toBe(400);
    expect((await api(a).get(`/api/v1/quarantine/${randomUUID()}`)).body.code).toBe(
      'quarantined_event_not_found',
    );
    const readOnly = await h
      .as(await a.keyWith(['tracking_plans.read']))
      .post('/api/v1/quarantine/replay')
      .send({ planId });
    expect(readOnly.status).toBe(403);
  });
});
