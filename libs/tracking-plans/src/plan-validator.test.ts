import fc from 'fast-check';
import { escapePointerToken } from './json-pointer';
import { checkPlan } from './plan-check';
import type { PlanRule, TrackingPlan } from './plan-document';
import {
  compilePlan,
  InvalidTrackingPlan,
  ruleVersionPin,
  violationCodes,
  type Violation,
} from './plan-validator';
import { objectOf, shapedObject, unplannedKey } from './testing/plan-arbitraries';

const meta = { planId: 'plan_1', version: 3 };
const propertiesSchema = (properties: Record<string, unknown>, required: string[] = [], closed = false) => ({
  type: 'object',
  properties: {
    properties: { type: 'object', properties, required, ...(closed ? { additionalProperties: false } : {}) },
  },
});
const order = (version: number, required: string[]): PlanRule => ({
  type: 'track',
  name: 'Order Completed',
  version,
  schema: propertiesSchema(
    {
      order_id: { type: 'string', pattern: '^o-[0-9]+$' },
      subtotal: { type: 'number', minimum: 0 },
      currency: { enum: ['USD', 'EUR'] },
      coupon: { type: ['string', 'null'] },
      total: { anyOf: [{ type: 'string' }, { type: 'number' }] },
    },
    required,
    true,
  ),
});
const plan: TrackingPlan = {
  common: { type: 'object', properties: { context: { type: 'object', required: ['app'] } } },
  rules: [
    order(1, ['order_id']),
    order(2, ['order_id', 'subtotal']),
    {
      type: 'identify',
      schema: {
        properties: {
          traits: { type: 'object', required: ['email'], properties: { email: { format: 'email' } } },
        },
      },
    },
    { type: 'page', name: 'Pricing', schema: { properties: { properties: { required: ['plan'] } } } },
    { type: 'screen', name: 'Home', schema: {} },
    { type: 'screen', schema: { properties: { properties: { required: ['source'] } } } },
  ],
};
const validator = compilePlan(plan, meta);
const track = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'track',
  event: 'Order Completed',
  properties,
  context: { app: {} },
  ...extra,
});
const brief = (violations: Violation[]) => violations.map((v) => [v.code, v.path, v.keyword, v.ruleVersion]);

describe('validate: each violation code', () => {
  test('a valid event has none', () => {
    expect(
      validator.validate(track({ order_id: 'o-1', subtotal: 3, currency: 'EUR', coupon: null, total: '3' })),
    ).toEqual([]);
  });

  test.each([
    [
      'missing_required',
      {},
      [
        ['missing_required', '/properties/order_id', 'required', 2],
        ['missing_required', '/properties/subtotal', 'required', 2],
      ],
    ],
    [
      'unplanned_property',
      { order_id: 'o-1', subtotal: 1, discount: 2 },
      [['unplanned_property', '/properties/discount', 'additionalProperties', 2]],
    ],
    ['type_mismatch', { order_id: 1, subtotal: 1 }, [['type_mismatch', '/properties/order_id', 'type', 2]]],
    [
      'type_mismatch of a union',
      { order_id: 'o-1', subtotal: 1, total: true },
      [['type_mismatch', '/properties/total', 'anyOf', 2]],
    ],
    [
      'type_mismatch of a type list',
      { order_id: 'o-1', subtotal: 1, coupon: 5 },
      [['type_mismatch', '/properties/coupon', 'type', 2]],
    ],
    [
      'value_not_allowed: pattern',
      { order_id: 'x', subtotal: 1 },
      [['value_not_allowed', '/properties/order_id', 'pattern', 2]],
    ],
    [
      'value_not_allowed: minimum',
      { order_id: 'o-1', subtotal: -1 },
      [['value_not_allowed', '/properties/subtotal', 'minimum', 2]],
    ],
    [
      'value_not_allowed: enum',
      { order_id: 'o-1', subtotal: 1, currency: 'GBP' },
      [['value_not_allowed', '/properties/currency', 'enum', 2]],
    ],
  ])('%s', (_label, properties, expected) => {
    expect(brief(validator.validate(track(properties)))).toEqual(expected);
  });

  test('messages say where and what', () => {
    expect(
      validator
        .validate(track({ order_id: 'o-1', subtotal: 1, total: true, discount: 1 }))
        .map((v) => v.message),
    ).toEqual(['/properties/discount is not in the plan', '/properties/total must be string or number']);
    expect(validator.validate(track({ subtotal: 1 }))[0]?.message).toBe('/properties/order_id is required');
  });

  test('unplanned_event: a track no rule names; common schema still applies', () => {
    expect(validator.validate({ type: 'track', event: 'Order Cancelled', properties: {} })).toEqual([
      {
        code: 'unplanned_event',
        path: '/event',
        keyword: 'rule',
        message: 'track "Order Cancelled" is not in the plan',
      },
    ]);
    expect(brief(validator.validate({ type: 'track', event: 'Nope', context: {} }))).toEqual([
      ['unplanned_event', '/event', 'rule', undefined],
      ['common_schema', '/context/app', 'required', undefined],
    ]);
  });

  test('common_schema: every error of the common schema, whatever its keyword', () => {
    expect(validator.validate(track({ order_id: 'o-1', subtotal: 1 }, { context: { app: 1 } }))).toEqual([]);
    expect(validator.validate(track({ order_id: 'o-1', subtotal: 1 }, { context: 'x' }))).toEqual([
      { code: 'common_schema', path: '/context', keyword: 'type', message: '/context must be object' },
    ]);
    expect(validator.validate(track({ order_id: 'o-1', subtotal: 1 }, { context: {} }))).toEqual([
      {
        code: 'common_schema',
        path: '/context/app',
        keyword: 'required',
        message: '/context/app is required',
      },
    ]);
  });

  test('the codes are the documented list', () => {
    expect(violationCodes).toEqual([
      'unplanned_event',
      'unplanned_property',
      'missing_required',
      'type_mismatch',
      'value_not_allowed',
      'common_schema',
      'unknown_pinned_version',
    ]);
  });
});

describe('validate: which rule applies', () => {
  test('unpinned: the latest version; pinned: that version', () => {
    const noSubtotal = track({ order_id: 'o-1' });
    expect(brief(validator.validate(noSubtotal))).toEqual([
      ['missing_required', '/properties/subtotal', 'required', 2],
    ]);
    expect(validator.validate(noSubtotal, 1)).toEqual([]);
    expect(brief(validator.validate(noSubtotal, 2))).toEqual([
      ['missing_required', '/properties/subtotal', 'required', 2],
    ]);
  });

  test('unknown_pinned_version: flagged, then the latest version applies', () => {
    expect(validator.validate(track({ order_id: 'o-1' }), 7)).toEqual([
      {
        code: 'unknown_pinned_version',
        path: '/context/protocols/event_version',
        keyword: 'rule',
        message: 'the event pins version 7 of its rule, which the plan does not have; version 2 applied',
        ruleVersion: 2,
      },
      {
        code: 'missing_required',
        path: '/properties/subtotal',
        keyword: 'required',
        message: '/properties/subtotal is required',
        ruleVersion: 2,
      },
    ]);
  });

  test('a pin on an unplanned event is not read', () => {
    expect(brief(validator.validate({ type: 'track', event: 'Nope', context: { app: {} } }, 9))).toEqual([
      ['unplanned_event', '/event', 'rule', undefined],
    ]);
  });

  test('the latest version is the highest, whatever the order of the rules', () => {
    const reversed = compilePlan({ rules: [order(2, ['subtotal']), order(1, [])] }, meta);
    expect(brief(reversed.validate(track({})))).toEqual([
      ['missing_required', '/properties/subtotal', 'required', 2],
    ]);
    const forward = compilePlan({ rules: [order(1, []), order(3, ['subtotal']), order(2, [])] }, meta);
    expect(brief(forward.validate(track({})))).toEqual([
      ['missing_required', '/properties/subtotal', 'required', 3],
    ]);
  });

  test('identify, group, alias: their rule when the plan has one, unconstrained otherwise', () => {
    expect(
      brief(validator.validate({ type: 'identify', userId: 'u', traits: {}, context: { app: {} } })),
    ).toEqual([['missing_required', '/traits/email', 'required', 1]]);
    expect(
      brief(
        validator.validate({ type: 'identify', userId: 'u', traits: { email: 'no' }, context: { app: {} } }),
      ),
    ).toEqual([['value_not_allowed', '/traits/email', 'format', 1]]);
    expect(
      validator.validate({ type: 'group', groupId: 'g', traits: { anything: 1 }, context: { app: {} } }),
    ).toEqual([]);
    expect(validator.validate({ type: 'alias', userId: 'u', previousId: 'p', context: { app: {} } })).toEqual(
      [],
    );
  });

  test('page: the named rule; another name is unplanned when no rule covers every page', () => {
    expect(
      brief(validator.validate({ type: 'page', name: 'Pricing', properties: {}, context: { app: {} } })),
    ).toEqual([['missing_required', '/properties/plan', 'required', 1]]);
    expect(validator.validate({ type: 'page', name: 'About', context: { app: {} } })).toEqual([
      { code: 'unplanned_event', path: '/name', keyword: 'rule', message: 'page "About" is not in the plan' },
    ]);
    expect(validator.validate({ type: 'page', context: { app: {} } })).toEqual([
      {
        code: 'unplanned_event',
        path: '/name',
        keyword: 'rule',
        message: 'page without a name is not in the plan',
      },
    ]);
  });

  test('screen: the named rule first, else the rule for every screen', () => {
    expect(
      validator.validate({ type: 'screen', name: 'Home', properties: {}, context: { app: {} } }),
    ).toEqual([]);
    expect(
      brief(validator.validate({ type: 'screen', name: 'Cart', properties: {}, context: { app: {} } })),
    ).toEqual([['missing_required', '/properties/source', 'required', 1]]);
    expect(brief(validator.validate({ type: 'screen', properties: {}, context: { app: {} } }))).toEqual([
      ['missing_required', '/properties/source', 'required', 1],
    ]);
  });

  test('a plan without rules of a type leaves it alone; a track is still unplanned', () => {
    const empty = compilePlan({ rules: [] }, meta);
    expect(empty.validate({ type: 'page', name: 'x' })).toEqual([]);
    expect(empty.validate({ type: 'identify', userId: 'u' })).toEqual([]);
    expect(brief(empty.validate({ type: 'track', event: 'x' }))).toEqual([
      ['unplanned_event', '/event', 'rule', undefined],
    ]);
    expect(brief(empty.validate({ type: 'track' }))).toEqual([
      ['unplanned_event', '/event', 'rule', undefined],
    ]);
  });

  test('the validator carries its plan version', () => {
    expect(validator.meta).toEqual(meta);
  });
});

describe('ruleVersionPin', () => {
  test.each([
    [{ context: { protocols: { event_version: 2 } } }, 2],
    [{ context: { protocols: { event_version: 1 } } }, 1],
    [{ context: { protocols: { event_version: 0 } } }, undefined],
    [{ context: { protocols: { event_version: 1.5 } } }, undefined],
    [{ context: { protocols: { event_version: '2' } } }, undefined],
    [{ context: { protocols: {} } }, undefined],
    [{ context: {} }, undefined],
    [{}, undefined],
  ])('%j -> %s', (event, pin) => {
    expect(ruleVersionPin(event)).toBe(pin);
  });
});

describe('odd keys and names', () => {
  test('keys with / and ~ are escaped in paths as RFC 6901 says', () => {
    const odd = compilePlan(
      {
        rules: [
          {
            type: 'track',
            name: 'e',
            schema: propertiesSchema(
              { 'a/b': { type: 'object', properties: { '~x': { type: 'string' } } } },
              ['m~/n'],
              true,
            ),
          },
        ],
      },
      meta,
    );
    expect(
      brief(odd.validate({ type: 'track', event: 'e', properties: { 'a/b': { '~x': 1 }, '/': 1 } })),
    ).toEqual([
      ['missing_required', '/properties/m~0~1n', 'required', 1],
      ['unplanned_property', '/properties/~1', 'additionalProperties', 1],
      ['type_mismatch', '/properties/a~1b/~0x', 'type', 1],
    ]);
  });

  test('__proto__ and constructor are properties like any other', () => {
    const odd = compilePlan(
      {
        rules: [
          {
            type: 'track',
            name: 'e',
            schema: propertiesSchema({ constructor: { type: 'string' } }, ['__proto__', 'constructor']),
          },
        ],
      },
      meta,
    );
    expect(brief(odd.validate({ type: 'track', event: 'e', properties: {} }))).toEqual([
      ['missing_required', '/properties/__proto__', 'required', 1],
      ['missing_required', '/properties/constructor', 'required', 1],
    ]);
    const given = JSON.parse(
      '{"type":"track","event":"e","properties":{"__proto__":1,"constructor":"c"}}',
    ) as Record<string, unknown>;
    expect(odd.validate(given)).toEqual([]);
  });

  test('full Unicode event names and property keys', () => {
    const name = '注文完了 🛒 e\u0301';
    const unicode = compilePlan(
      {
        rules: [
          { type: 'track', name, schema: propertiesSchema({ 'prix €': { type: 'number' } }, ['prix €']) },
        ],
      },
      meta,
    );
    expect(unicode.validate({ type: 'track', event: name, properties: { 'prix €': 1 } })).toEqual([]);
    expect(brief(unicode.validate({ type: 'track', event: name.normalize('NFC'), properties: {} }))).toEqual([
      ['unplanned_event', '/event', 'rule', undefined],
    ]);
    expect(brief(unicode.validate({ type: 'track', event: name, properties: {} }))).toEqual([
      ['missing_required', '/properties/prix €', 'required', 1],
    ]);
  });
});

describe('generated plans', () => {
  const eventOf = (name: string, properties: unknown) =>
    objectOf([
      ['type', 'track'],
      ['event', name],
      ['properties', properties],
    ]);

  test('a plan passes checkPlan, and the example it was generated with has no violation', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
        shapedObject,
        (name, shaped) => {
          const generated: TrackingPlan = {
            rules: [
              { type: 'track', name, schema: { type: 'object', properties: { properties: shaped.schema } } },
            ],
          };
          expect(checkPlan(generated)).toEqual({ ok: true, plan: generated });
          expect(compilePlan(generated, meta).validate(eventOf(name, shaped.value))).toEqual([]);
        },
      ),
      { numRuns: 30 },
    );
  });

  test('each way of breaking the example is reported at the property, escaped', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }),
        shapedObject,
        fc.nat(),
        unplannedKey,
        (name, shaped, pick, extra) => {
          const compiled = compilePlan(
            {
              rules: [
                {
                  type: 'track',
                  name,
                  schema: { type: 'object', properties: { properties: shaped.schema } },
                },
              ],
            },
            meta,
          );
          const target = shaped.properties[pick % shaped.properties.length]!;
          const path = `/properties/${escapePointerToken(target.key)}`;
          const entries = shaped.properties.map((p) => [p.key, p.value] as const);

          const wrong = compiled.validate(
            eventOf(name, objectOf(entries.map(([k, v]) => [k, k === target.key ? target.wrongType : v]))),
          );
          expect(wrong).toContainEqual(
            expect.objectContaining({ code: 'type_mismatch', path, ruleVersion: 1 }),
          );

          const without = compiled.validate(
            eventOf(name, objectOf(entries.filter(([k]) => k !== target.key))),
          );
          expect(without).toEqual(
            target.required ? [expect.objectContaining({ code: 'missing_required', path })] : [],
          );

          if (!shaped.properties.some((p) => p.key === extra)) {
            const more = compiled.validate(eventOf(name, objectOf([...entries, [extra, 1]])));
            expect(more).toEqual([
              expect.objectContaining({
                code: 'unplanned_property',
                path: `/properties/${escapePointerToken(extra)}`,
              }),
            ]);
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('hostile schemas', () => {
  test('a backtracking pattern runs in linear time on a long value', () => {
    const hostile = compilePlan(
      {
        rules: [
          {
            type: 'track',
            name: 'e',
            schema: propertiesSchema({ s: { type: 'string', pattern: '^(a+)+$' } }),
          },
        ],
      },
      meta,
    );
    const started = process.hrtime.bigint();
    const violations = hostile.validate({
      type: 'track',
      event: 'e',
      properties: { s: `${'a'.repeat(20_000)}!` },
    });
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    expect(brief(violations)).toEqual([['value_not_allowed', '/properties/s', 'pattern', 1]]);
    // V8's own engine would take longer than the age of the universe here.
    expect(ms).toBeLessThan(2_000);
  });

  test('patterns keep JavaScript meaning: unanchored search, Unicode classes', () => {
    const compiled = compilePlan(
      {
        rules: [
          {
            type: 'track',
            name: 'e',
            schema: propertiesSchema({
              a: { pattern: 'b' },
              l: { pattern: '^\\p{L}+$' },
              d: { pattern: '^\\d{2}$' },
            }),
          },
        ],
      },
      meta,
    );
    expect(
      compiled.validate({ type: 'track', event: 'e', properties: { a: 'abc', l: 'héllo', d: '12' } }),
    ).toEqual([]);
    expect(
      brief(compiled.validate({ type: 'track', event: 'e', properties: { a: 'ac', l: 'h1', d: '123' } })).map(
        (v) => v[1],
      ),
    ).toEqual(['/properties/a', '/properties/l', '/properties/d']);
  });

  test('compilePlan refuses a plan that checkPlan refuses, with its problems', () => {
    const bad = { rules: [{ type: 'track', schema: { $ref: 'http://evil.example/x' } }] } as TrackingPlan;
    expect(() => compilePlan(bad, meta)).toThrow(InvalidTrackingPlan);
    try {
      compilePlan(bad, meta);
    } catch (error) {
      expect((error as InvalidTrackingPlan).problems.map((p) => p.code)).toEqual([
        'rule_name_required',
        'ref_not_local',
      ]);
      expect((error as InvalidTrackingPlan).code).toBe('TRACKING_PLAN_INVALID');
      expect((error as Error).message).toBe(
        'tracking plan is invalid: rule_name_required at /rules/0/name, ref_not_local at /rules/0/schema/$ref',
      );
    }
  });
});

describe('compilePlan lazy', () => {
  const events = [
    track({ order_id: 'o-1', subtotal: 3, currency: 'EUR', coupon: null, total: '3' }),
    track({ order_id: 'x', subtotal: -1, currency: 'GBP', extra: 1 }),
    track({}, { context: {} }),
    track({ order_id: 'o-1' }, { context: { app: {}, protocols: { event_version: 1 } } }),
    track({ order_id: 'o-1' }, { context: { app: {}, protocols: { event_version: 7 } } }),
    { type: 'identify', traits: { email: 'not an email' }, context: { app: {} } },
    { type: 'page', name: 'Pricing', properties: {}, context: { app: {} } },
    { type: 'page', name: 'Unknown', properties: {}, context: { app: {} } },
    { type: 'screen', name: 'Settings', properties: {}, context: { app: {} } },
    { type: 'track', event: 'Unplanned', context: { app: {} } },
  ];

  test('finds the violations the eager plan finds, event by event', () => {
    const lazy = compilePlan(plan, meta, { lazy: true });
    for (const event of events)
      expect(lazy.validate(event, ruleVersionPin(event))).toEqual(
        validator.validate(event, ruleVersionPin(event)),
      );
  });

  test('compiles each schema on its first event only, and the common schema once', () => {
    const compiled: number[] = [];
    const lazy = compilePlan(plan, meta, { lazy: true, onCompiled: (ms) => compiled.push(ms) });
    expect(compiled).toHaveLength(0);
    lazy.validate(track({ order_id: 'o-1', subtotal: 3 }));
    // The common schema and Order Completed v2 (the latest).
    expect(compiled).toHaveLength(2);
    lazy.validate(track({ order_id: 'o-2', subtotal: 4 }));
    lazy.validate(track({}), 2);
    expect(compiled).toHaveLength(2);
    lazy.validate(track({}), 1);
    lazy.validate({ type: 'track', event: 'Unplanned', context: { app: {} } });
    expect(compiled).toHaveLength(3);
    for (const ms of compiled) expect(ms).toBeGreaterThan(0);
  });

  test('the eager plan reports each schema compiled at once', () => {
    const compiled: number[] = [];
    compilePlan(plan, meta, { onCompiled: (ms) => compiled.push(ms) });
    expect(compiled).toHaveLength(plan.rules.length + 1);
  });

  test('still refuses a plan whose document fails, before any event', () => {
    const duplicate: TrackingPlan = { rules: [order(1, []), order(1, [])] };
    expect(() => compilePlan(duplicate, meta, { lazy: true })).toThrow(InvalidTrackingPlan);
    const notAPlan = { rules: [{ type: 'track', name: 'X', schema: 7 }] } as unknown as TrackingPlan;
    expect(() => compilePlan(notAPlan, meta, { lazy: true })).toThrow(
      /invalid_document at \/rules\/0\/schema/,
    );
  });

  test('a schema that fails to compile throws InvalidTrackingPlan on its events, every time, and only on them', () => {
    const broken: TrackingPlan = {
      rules: [
        { type: 'track', name: 'Broken', schema: { requird: ['x'] } },
        { type: 'track', name: 'Fine', schema: propertiesSchema({}, ['x']) },
      ],
    };
    expect(() => compilePlan(broken, meta)).toThrow(InvalidTrackingPlan);
    const lazy = compilePlan(broken, meta, { lazy: true });
    for (let i = 0; i < 2; i++) {
      const thrown = (() => {
        try {
          lazy.validate({ type: 'track', event: 'Broken' });
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(thrown).toBeInstanceOf(InvalidTrackingPlan);
      expect((thrown as InvalidTrackingPlan).problems.map((p) => [p.code, p.path])).toEqual([
        ['schema_invalid', '/rules/0/schema'],
      ]);
    }
    expect(brief(lazy.validate({ type: 'track', event: 'Fine', properties: {} }))).toEqual([
      ['missing_required', '/properties/x', 'required', 1],
    ]);
  });
});
