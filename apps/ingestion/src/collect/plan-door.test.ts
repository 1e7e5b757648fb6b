import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { MAX_VIOLATIONS_PER_EVENT, type TrackingEvent } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import type { ViolationEntry } from '@pipeline/redis';
import type { PlanLookup, TrackingPlanBinding } from '@pipeline/tenancy';
import { compilePlan, ruleVersionPin, type TrackingPlan } from '@pipeline/tracking-plans';
import { orderPlan } from '../testing/order-plan';
import { MAX_PINNED_LOOKUPS, PlanDoor, rudderTyperPin, SAMPLE_PAYLOAD_MAX_BYTES } from './plan-door';

const order = orderPlan;

/**
 * Plan versions as a TrackingPlanCache would find them (the real compiled plans): `versions`
 * by `account plan version`, missing ones `not_found`, `down` ones `unavailable`. Counts the
 * lookups that had to be awaited.
 */
function plansOf(versions: Record<string, TrackingPlan>, down: string[] = []) {
  const compiled = new Map(
    Object.entries(versions).map(([key, plan]) => {
      const [, planId, version] = key.split(' ');
      return [key, compilePlan(plan, { planId: planId!, version: Number(version) }, { lazy: true })];
    }),
  );
  const asked: string[] = [];
  const find = (key: string): PlanLookup => {
    if (down.includes(key)) return { state: 'unavailable' };
    const plan = compiled.get(key);
    return plan ? { state: 'ready', plan } : { state: 'not_found' };
  };
  return {
    asked,
    // Only versions already read are known without asking.
    peek: (a: string, p: string, v: number) =>
      asked.includes(`${a} ${p} ${v}`) ? find(`${a} ${p} ${v}`) : undefined,
    get: async (a: string, p: string, v: number) => {
      asked.push(`${a} ${p} ${v}`);
      return find(`${a} ${p} ${v}`);
    },
  };
}

function doorOf(plans: ReturnType<typeof plansOf>) {
  const counted = { violations: new Map<string, number>(), unavailable: 0 };
  const ledger: { accountId: string; entries: ViolationEntry[] }[] = [];
  const logs: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  const door = new PlanDoor(
    plans,
    {
      planViolations: (code, count) =>
        counted.violations.set(code, (counted.violations.get(code) ?? 0) + count),
      planUnavailable: (count) => (counted.unavailable += count),
    },
    createLogger({ service: 'test', stream }),
    { record: (accountId, entries) => ledger.push({ accountId, entries: [...entries] }) },
  );
  return { door, counted, logs, ledger };
}

const binding = (version: number, kind: 'latest' | 'pinned' = 'latest'): TrackingPlanBinding => ({
  planId: 'p1',
  binding: kind,
  version,
  policy: { actions: { missing_required: 'quarantine' } },
});
const track = (properties: Record<string, unknown>, context: Record<string, unknown> = {}): TrackingEvent =>
  ({
    type: 'track',
    event: 'Order Completed',
    messageId: 'm',
    anonymousId: 'a',
    properties,
    context,
  }) as unknown as TrackingEvent;
const pinTo = (version: unknown, trackingPlanId = 'p1') => ({
  ruddertyper: { trackingPlanId, trackingPlanVersion: version },
});
const brief = (verdicts: { version: number | null; violations: { code: string; path: string }[] }[]) =>
  verdicts.map((v) => [v.version, v.violations.map((x) => `${x.code} ${x.path}`)]);

describe('PlanDoor', () => {
  it('gives each event the bound version and its violations, and carries the binding’s plan', async () => {
    const plans = plansOf({ 'acc p1 1': order(['order_id']) });
    const { door, counted } = doorOf(plans);
    const result = await door.verdicts('acc', binding(1), [track({}), track({ order_id: 'o-1' })]);
    expect(result.plan).toEqual({
      planId: 'p1',
      version: 1,
      policy: { actions: { missing_required: 'quarantine' } },
    });
    expect(result.verdicts).toEqual([
      {
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
      },
      { version: 1, violations: [] },
    ]);
    expect(counted.unavailable).toBe(0);
    door.count('acc', 'wk', 'p1', [track({}), track({ order_id: 'o-1' })], result.verdicts, 'now');
    expect([...counted.violations]).toEqual([['missing_required', 1]]);
    // Read once; the next request finds it without asking.
    await door.verdicts('acc', binding(1), [track({})]);
    expect(plans.asked).toEqual(['acc p1 1']);
  });

  it('counts violations in the ledger by version, write key, event, code and path, a sample each', async () => {
    const { door, ledger, counted } = doorOf(plansOf({ 'acc p1 1': order(['order_id', 'subtotal'], true) }));
    const events = [
      track({}),
      track({ order_id: 'o-2', extra: true }),
      { ...track({}), messageId: 'm-3' } as TrackingEvent,
      { type: 'page', name: 'Home', messageId: 'm-4', anonymousId: 'a' } as unknown as TrackingEvent,
    ];
    const result = await door.verdicts('acc', binding(1), events);
    door.count('acc', 'wk-9', 'p1', events, result.verdicts, '2026-11-29T10:00:00.000Z');
    expect(ledger).toHaveLength(1);
    expect(ledger[0]?.accountId).toBe('acc');
    const keyed = ledger[0]!.entries.map((e) => ({ ...e.key, count: e.count }));
    const base = {
      planId: 'p1',
      version: 1,
      writeKeyId: 'wk-9',
      eventType: 'track',
      eventName: 'Order Completed',
    };
    expect(keyed).toEqual([
      { ...base, code: 'missing_required', path: '/properties/order_id', count: 2 },
      { ...base, code: 'missing_required', path: '/properties/subtotal', count: 3 },
      { ...base, code: 'unplanned_property', path: '/properties/extra', count: 1 },
    ]);
    // The plan has no page rule: pages are not checked, so none is counted.
    expect([...counted.violations]).toEqual([
      ['missing_required', 5],
      ['unplanned_property', 1],
    ]);
    // A key's sample is its first event's.
    expect(ledger[0]!.entries[0]!.sample()).toEqual({
      messageId: 'm',
      receivedAt: '2026-11-29T10:00:00.000Z',
      message: '/properties/order_id is required',
      payload: events[0],
    });
    expect(ledger[0]!.entries[2]!.sample().messageId).toBe('m');
  });

  it('counts events whose plan could not be read as plan_unavailable, and cuts big sample payloads', async () => {
    const { door, ledger } = doorOf(plansOf({}, ['acc p1 1']));
    const big = track({ blob: 'x'.repeat(SAMPLE_PAYLOAD_MAX_BYTES) });
    const result = await door.verdicts('acc', binding(1), [big, track({})]);
    door.count('acc', 'wk', 'p1', [big, track({})], result.verdicts, 't');
    expect(ledger[0]!.entries.map((e) => [e.key.version, e.key.code, e.key.path, e.count])).toEqual([
      [null, 'plan_unavailable', '', 2],
    ]);
    const sample = ledger[0]!.entries[0]!.sample();
    expect(sample.payload.truncated).toBe(true);
    expect(JSON.stringify(sample.payload).length).toBeLessThan(SAMPLE_PAYLOAD_MAX_BYTES);
  });

  it('records nothing in the ledger for events that keep to the plan', async () => {
    const { door, ledger } = doorOf(plansOf({ 'acc p1 1': order(['order_id']) }));
    const events = [track({ order_id: 'o' })];
    const result = await door.verdicts('acc', binding(1), events);
    door.count('acc', 'wk', 'p1', events, result.verdicts, 't');
    expect(ledger).toEqual([]);
  });

  it('accepts every event unchecked, version null, when the plan cannot be read', async () => {
    const { door, counted } = doorOf(plansOf({ 'acc p1 1': order(['order_id']) }, ['acc p1 1']));
    const result = await door.verdicts('acc', binding(1), [track({}), track({})]);
    expect(result.verdicts).toEqual([
      { version: null, violations: [] },
      { version: null, violations: [] },
    ]);
    expect(result.plan.version).toBe(1);
    expect(counted.unavailable).toBe(2);
  });

  it('holds an event pinning a plan version with RudderTyper to that version', async () => {
    const plans = plansOf({ 'acc p1 1': order(['order_id']), 'acc p1 2': order(['order_id', 'subtotal']) });
    const { door } = doorOf(plans);
    const result = await door.verdicts('acc', binding(2), [
      track({ order_id: 'o-1' }, pinTo(1)),
      track({ order_id: 'o-1' }),
      track({ order_id: 'o-1' }, pinTo(2)),
      // Another plan's pin is not ours to honour.
      track({ order_id: 'o-1' }, pinTo(1, 'p9')),
    ]);
    expect(brief(result.verdicts)).toEqual([
      [1, []],
      [2, ['missing_required /properties/subtotal']],
      [2, ['missing_required /properties/subtotal']],
      [2, ['missing_required /properties/subtotal']],
    ]);
    expect(plans.asked).toEqual(['acc p1 2', 'acc p1 1']);
  });

  it('holds a pin to a version that does not exist to the bound one, flagged', async () => {
    const plans = plansOf({ 'acc p1 3': order(['order_id']) });
    const { door } = doorOf(plans);
    const result = await door.verdicts('acc', binding(3, 'pinned'), [
      track({}, pinTo(7)),
      track({}, pinTo(2)),
    ]);
    expect(result.verdicts[0]?.violations[0]).toEqual({
      code: 'unknown_pinned_version',
      path: '/context/ruddertyper/trackingPlanVersion',
      keyword: 'rule',
      message: 'the event pins version 7 of the tracking plan, which does not exist; version 3 applied',
    });
    expect(brief(result.verdicts)).toEqual([
      [
        3,
        [
          'unknown_pinned_version /context/ruddertyper/trackingPlanVersion',
          'missing_required /properties/order_id',
        ],
      ],
      [
        3,
        [
          'unknown_pinned_version /context/ruddertyper/trackingPlanVersion',
          'missing_required /properties/order_id',
        ],
      ],
    ]);
    // A pinned binding may have newer versions: both pins were asked.
    expect(plans.asked).toEqual(['acc p1 3', 'acc p1 7', 'acc p1 2']);
  });

  it('does not ask for a pin above a latest binding’s version: there is none', async () => {
    const plans = plansOf({ 'acc p1 2': order([]), 'acc p1 5': order([]) });
    const { door } = doorOf(plans);
    const result = await door.verdicts('acc', binding(2), [track({}, pinTo(5))]);
    expect(brief(result.verdicts)).toEqual([
      [2, ['unknown_pinned_version /context/ruddertyper/trackingPlanVersion']],
    ]);
    expect(plans.asked).toEqual(['acc p1 2']);
  });

  it('flags only the events whose pinned version cannot be read', async () => {
    const plans = plansOf({ 'acc p1 1': order([]), 'acc p1 2': order([]) }, ['acc p1 1']);
    const { door, counted } = doorOf(plans);
    const result = await door.verdicts('acc', binding(2), [track({}, pinTo(1)), track({})]);
    expect(brief(result.verdicts)).toEqual([
      [null, []],
      [2, []],
    ]);
    expect(counted.unavailable).toBe(1);
  });

  it(`looks up at most ${MAX_PINNED_LOOKUPS} pinned versions a request; events pinning more are flagged`, async () => {
    const versions = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`acc p1 ${i + 1}`, order([])]));
    const plans = plansOf(versions);
    const { door } = doorOf(plans);
    const events = Array.from({ length: 9 }, (_, i) => track({}, pinTo(i + 1)));
    const result = await door.verdicts('acc', binding(10, 'pinned'), events);
    expect(result.verdicts.map((v) => v.version)).toEqual([1, 2, 3, 4, null, null, null, null, null]);
    expect(plans.asked).toHaveLength(1 + MAX_PINNED_LOOKUPS);
  });

  it('passes Segment’s rule version pin to the plan', async () => {
    const plan: TrackingPlan = {
      rules: [
        { ...order(['order_id']).rules[0]!, version: 1 },
        { ...order(['order_id', 'subtotal']).rules[0]!, version: 2 },
      ],
    };
    const { door } = doorOf(plansOf({ 'acc p1 1': plan }));
    const result = await door.verdicts('acc', binding(1), [
      track({ order_id: 'o' }, { protocols: { event_version: 1 } }),
      track({ order_id: 'o' }),
    ]);
    expect(brief(result.verdicts)).toEqual([
      [1, []],
      [1, ['missing_required /properties/subtotal']],
    ]);
  });

  it(`lists at most ${MAX_VIOLATIONS_PER_EVENT} violations of an event and counts the rest`, async () => {
    const { door } = doorOf(plansOf({ 'acc p1 1': order([], true) }));
    const properties = Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`x${i}`, i]));
    const [verdict] = (await door.verdicts('acc', binding(1), [track(properties)])).verdicts;
    expect(verdict?.violations).toHaveLength(MAX_VIOLATIONS_PER_EVENT);
    expect(verdict?.violations[0]?.path).toBe('/properties/x0');
    expect(verdict?.unlisted).toBe(50);
  });

  it('accepts the events of a plan whose schema will not compile unchecked, and logs it once a minute', async () => {
    const broken: TrackingPlan = {
      rules: [{ type: 'track', name: 'Order Completed', schema: { requird: [] } }],
    };
    const { door, counted, logs } = doorOf(plansOf({ 'acc p1 1': broken }));
    for (let i = 0; i < 3; i++) {
      const result = await door.verdicts('acc', binding(1), [track({})]);
      expect(result.verdicts).toEqual([{ version: null, violations: [] }]);
    }
    expect(counted.unavailable).toBe(3);
    expect(logs.filter((line) => line.includes('tracking plan cannot validate'))).toHaveLength(1);
  });

  it('finds through the door exactly what the compiled plan finds, whatever the keys and values (full Unicode)', async () => {
    const plan: TrackingPlan = {
      rules: [
        {
          type: 'track',
          name: 'Order Completed',
          schema: {
            properties: {
              properties: {
                type: 'object',
                required: ['order_id', 'ünï©ødé 🚀'],
                additionalProperties: { type: ['string', 'number'] },
                properties: { order_id: { type: 'string', maxLength: 8 } },
              },
            },
          },
        },
      ],
    };
    const direct = compilePlan(plan, { planId: 'p1', version: 1 });
    const { door } = doorOf(plansOf({ 'acc p1 1': plan }));
    const value = fc.oneof(
      fc.string({ unit: 'binary' }),
      fc.double({ noNaN: true }),
      fc.boolean(),
      fc.constant(null),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string({ unit: 'binary', maxLength: 12 }), value, { maxKeys: 8 }),
        async (properties) => {
          // Through JSON, as an event reaches the door.
          const event = JSON.parse(JSON.stringify(track(properties))) as TrackingEvent;
          const [verdict] = (await door.verdicts('acc', binding(1), [event])).verdicts;
          expect(verdict).toEqual({
            version: 1,
            violations: direct.validate(event as unknown as Record<string, unknown>, ruleVersionPin(event)),
          });
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('rudderTyperPin', () => {
  it('reads a positive integer version of the bound plan only', () => {
    expect(rudderTyperPin(track({}, pinTo(3)), 'p1')).toBe(3);
    expect(rudderTyperPin(track({}, pinTo(3)), 'p2')).toBeUndefined();
    for (const version of [0, -1, 1.5, '3', null, 2 ** 60])
      expect(rudderTyperPin(track({}, pinTo(version)), 'p1')).toBeUndefined();
    expect(rudderTyperPin(track({}, { ruddertyper: 'p1' }), 'p1')).toBeUndefined();
    expect(rudderTyperPin(track({}), 'p1')).toBeUndefined();
  });
});
