import { checkPlan } from '@pipeline/tracking-plans';
import { inferenceCaps, inferPlan, type ProfileRow, type TrafficName } from './plan-inference';

// The inference rules on profiles whose answer is known; the database side (what the profile
// holds) is tested in libs/destinations and end to end in plan-from-traffic.test.ts.

const seen = (name: string | null, count: number, type = 'track'): TrafficName => ({
  type,
  name,
  count,
  firstSeen: new Date('2026-11-01T00:00:00Z'),
  lastSeen: new Date('2026-11-02T00:00:00Z'),
  distinctNames: 1,
});
const member = (
  property: string,
  jsonType: ProfileRow['jsonType'],
  count: number,
  strings: string[] | null = null,
  name: string | null = 'E',
): ProfileRow => ({ type: 'track', name, property, jsonType, count, strings });
const options = { requiredRatio: 1, maxEnumValues: 10, rowsPerName: 1_000 };

const innerOf = (profile: ProfileRow[], count = 10, opts = options) => {
  const { plan } = inferPlan([seen('E', count)], profile, opts);
  return (plan.rules[0]!.schema.properties as Record<string, Record<string, unknown>>).properties;
};

describe('inferPlan', () => {
  it('types each member by what was sent: integer within number, null allowed, enums with null', () => {
    expect(
      innerOf([
        member('whole', 'integer', 10),
        member('mixedNumbers', 'integer', 6),
        member('mixedNumbers', 'number', 4),
        member('nullable', 'string', 7, ['b', 'a']),
        member('nullable', 'null', 3),
        member('alwaysNull', 'null', 2),
        member('flag', 'boolean', 10),
      ]),
    ).toEqual({
      type: 'object',
      properties: {
        alwaysNull: { type: 'null' },
        flag: { type: 'boolean' },
        mixedNumbers: { type: 'number' },
        nullable: { type: ['string', 'null'], enum: ['a', 'b', null] },
        whole: { type: 'integer' },
      },
      required: ['flag', 'mixedNumbers', 'nullable', 'whole'],
      additionalProperties: false,
    });
  });

  it('judges required on the sampled rows, not on every call seen', () => {
    // 5,000 calls, 1,000 sampled: a member in all 1,000 sampled rows is required.
    expect(innerOf([member('a', 'string', 1_000, null)], 5_000).required).toEqual(['a']);
    expect(innerOf([member('a', 'string', 999, null)], 5_000).required).toBeUndefined();
    expect(
      innerOf([member('a', 'string', 5, null)], 10, { ...options, requiredRatio: 0.5 }).required,
    ).toEqual(['a']);
    expect(
      innerOf([member('a', 'string', 4, null)], 10, { ...options, requiredRatio: 0.5 }).required,
    ).toBeUndefined();
  });

  it('gives no enum past the limit, for long values, or when the limit is 0', () => {
    const long = 'x'.repeat(inferenceCaps.maxEnumValueLength + 1);
    expect(
      innerOf([member('a', 'string', 10, ['p', 'q'])], 10, { ...options, maxEnumValues: 1 }).properties,
    ).toEqual({
      a: { type: 'string' },
    });
    expect(innerOf([member('a', 'string', 10, ['p', long])]).properties).toEqual({ a: { type: 'string' } });
    expect(
      innerOf([member('a', 'string', 10, ['p'])], 10, { ...options, maxEnumValues: 0 }).properties,
    ).toEqual({
      a: { type: 'string' },
    });
  });

  it('flags mixed types untyped, __proto__ with its rule open, and members past the cap', () => {
    const many = Array.from({ length: inferenceCaps.maxPropertiesPerRule + 1 }, (_, i) =>
      member(`p${String(i).padStart(3, '0')}`, 'integer', 1_000 - i),
    );
    const { plan, flagged } = inferPlan(
      [seen('E', 1_000), seen('F', 3)],
      [
        ...many,
        member('a/b~c', 'integer', 2, null, 'F'),
        member('a/b~c', 'string', 1, ['x'], 'F'),
        member('__proto__', 'string', 3, ['x'], 'F'),
      ],
      options,
    );
    expect(flagged).toEqual([
      {
        type: 'track',
        name: 'E',
        path: '/properties/p200',
        reason: 'properties_capped',
        types: { integer: 800 },
      },
      {
        type: 'track',
        name: 'F',
        path: '/properties/__proto__',
        reason: 'unplannable_name',
        types: { string: 3 },
      },
      {
        type: 'track',
        name: 'F',
        path: '/properties/a~1b~0c',
        reason: 'mixed_types',
        types: { integer: 2, string: 1 },
      },
    ]);
    const inner = (i: number) =>
      (plan.rules[i]!.schema.properties as Record<string, Record<string, unknown>>).properties!;
    expect(Object.keys(inner(0).properties as object)).toHaveLength(inferenceCaps.maxPropertiesPerRule);
    expect(inner(0).additionalProperties).toBeUndefined();
    expect(inner(1)).toEqual({ type: 'object', properties: { 'a/b~c': {} }, required: ['a/b~c'] });
    // The draft passes the plan's checks: __proto__ is never planned.
    expect(checkPlan(plan).ok).toBe(true);
  });

  it('makes one rule per name: identify and group on traits, a page rule without a name', () => {
    const { plan, rules } = inferPlan(
      [seen(null, 2, 'page'), seen(null, 1, 'identify'), seen(null, 1, 'alias'), seen('Cart', 1, 'screen')],
      [{ type: 'identify', name: null, property: 'email', jsonType: 'string', count: 1, strings: ['e'] }],
      options,
    );
    expect(plan.rules.map((r) => [r.type, r.name, Object.keys(r.schema.properties as object)])).toEqual([
      ['page', undefined, ['properties']],
      ['identify', undefined, ['traits']],
      ['screen', 'Cart', ['properties']],
    ]);
    expect(plan.rules[1]!.schema.required).toEqual(['traits']);
    expect(plan.rules[0]!.schema.required).toBeUndefined();
    expect(rules.map((r) => [r.type, r.observedCount, r.sampledCount])).toEqual([
      ['page', 2, 2],
      ['identify', 1, 1],
      ['screen', 1, 1],
    ]);
    expect(checkPlan(plan).ok).toBe(true);
  });
});
