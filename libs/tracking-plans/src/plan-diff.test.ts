import { changeKinds, diffPlans, type ChangeCode } from './plan-diff';
import type { JsonSchema, PlanRule, TrackingPlan } from './plan-document';

const rule = (properties: JsonSchema, extra: Partial<PlanRule> = {}): PlanRule => ({
  type: 'track',
  name: 'Order Completed',
  schema: { type: 'object', properties: { properties } },
  ...extra,
});
const planOf = (...rules: PlanRule[]): TrackingPlan => ({ rules });
const props = (properties: Record<string, JsonSchema>, more: JsonSchema = {}): JsonSchema => ({
  type: 'object',
  properties,
  ...more,
});

/** One fixture pair per change code: the property schema before and after, and where the change is. */
const fixtures: [ChangeCode, JsonSchema, JsonSchema, string][] = [
  ['required_added', props({ id: {} }), props({ id: {} }, { required: ['id'] }), '/properties/id'],
  ['required_removed', props({ id: {} }, { required: ['id'] }), props({ id: {} }), '/properties/id'],
  ['property_added', props({}), props({ id: { type: 'string' } }), '/properties/id'],
  ['property_removed', props({ id: { type: 'string' } }), props({}), '/properties/id'],
  [
    'property_removed_closed',
    props({ id: {}, a: {} }, { additionalProperties: false }),
    props({ a: {} }, { additionalProperties: false }),
    '/properties/id',
  ],
  [
    'type_narrowed',
    props({ id: { type: ['string', 'number'] } }),
    props({ id: { type: 'string' } }),
    '/properties/id',
  ],
  ['type_narrowed', props({ id: { type: 'number' } }), props({ id: { type: 'integer' } }), '/properties/id'],
  ['type_narrowed', props({ id: {} }), props({ id: { type: 'string' } }), '/properties/id'],
  ['type_widened', props({ id: { type: 'integer' } }), props({ id: { type: 'number' } }), '/properties/id'],
  [
    'type_widened',
    props({ id: { type: 'string' } }),
    props({ id: { type: ['string', 'null'] } }),
    '/properties/id',
  ],
  ['type_widened', props({ id: { type: 'string' } }), props({ id: {} }), '/properties/id'],
  ['type_changed', props({ id: { type: 'string' } }), props({ id: { type: 'number' } }), '/properties/id'],
  [
    'enum_added',
    props({ c: { type: 'string' } }),
    props({ c: { type: 'string', enum: ['USD'] } }),
    '/properties/c',
  ],
  [
    'enum_value_removed',
    props({ c: { enum: ['USD', 'EUR'] } }),
    props({ c: { enum: ['USD'] } }),
    '/properties/c',
  ],
  [
    'enum_value_added',
    props({ c: { enum: ['USD'] } }),
    props({ c: { enum: ['USD', 'EUR'] } }),
    '/properties/c',
  ],
  ['enum_removed', props({ c: { enum: ['USD'] } }), props({ c: {} }), '/properties/c'],
  ['const_changed', props({ v: {} }), props({ v: { const: 2 } }), '/properties/v'],
  ['const_changed', props({ v: { const: 1 } }), props({ v: { const: 2 } }), '/properties/v'],
  ['const_removed', props({ v: { const: 1 } }), props({ v: {} }), '/properties/v'],
  [
    'additional_properties_tightened',
    props({ a: {} }),
    props({ a: {} }, { additionalProperties: false }),
    '/properties/*',
  ],
  [
    'additional_properties_tightened',
    props({ a: {} }),
    props({ a: {} }, { additionalProperties: { type: 'string' } }),
    '/properties/*',
  ],
  [
    'additional_properties_loosened',
    props({ a: {} }, { additionalProperties: false }),
    props({ a: {} }),
    '/properties/*',
  ],
  [
    'additional_properties_loosened',
    props({ a: {} }, { additionalProperties: { type: 'string' } }),
    props({ a: {} }, { additionalProperties: true }),
    '/properties/*',
  ],
  ['bound_tightened', props({ n: {} }), props({ n: { minimum: 0 } }), '/properties/n'],
  ['bound_tightened', props({ n: { minimum: 0 } }), props({ n: { minimum: 1 } }), '/properties/n'],
  ['bound_tightened', props({ n: { maxLength: 10 } }), props({ n: { maxLength: 9 } }), '/properties/n'],
  ['bound_tightened', props({ n: { multipleOf: 2 } }), props({ n: { multipleOf: 4 } }), '/properties/n'],
  ['bound_tightened', props({ n: {} }), props({ n: { multipleOf: 4 } }), '/properties/n'],
  ['bound_loosened', props({ n: { minimum: 1 } }), props({ n: { minimum: 0 } }), '/properties/n'],
  ['bound_loosened', props({ n: { maxItems: 3 } }), props({ n: { maxItems: 4 } }), '/properties/n'],
  ['bound_loosened', props({ n: { exclusiveMaximum: 3 } }), props({ n: {} }), '/properties/n'],
  ['bound_loosened', props({ n: { multipleOf: 4 } }), props({ n: { multipleOf: 2 } }), '/properties/n'],
  ['bound_loosened', props({ n: { multipleOf: 4 } }), props({ n: {} }), '/properties/n'],
  ['pattern_changed', props({ s: {} }), props({ s: { pattern: '^a' } }), '/properties/s'],
  ['pattern_changed', props({ s: { pattern: '^a' } }), props({ s: { pattern: '^b' } }), '/properties/s'],
  ['pattern_removed', props({ s: { pattern: '^a' } }), props({ s: {} }), '/properties/s'],
  ['format_changed', props({ s: {} }), props({ s: { format: 'email' } }), '/properties/s'],
  ['format_removed', props({ s: { format: 'email' } }), props({ s: {} }), '/properties/s'],
  [
    'annotation_changed',
    props({ s: { description: 'a' } }),
    props({ s: { description: 'b' } }),
    '/properties/s',
  ],
  ['annotation_changed', props({ s: { title: 'a' } }), props({ s: {} }), '/properties/s'],
  [
    'schema_changed',
    props({ s: { anyOf: [{ type: 'string' }] } }),
    props({ s: { anyOf: [{ type: 'number' }] } }),
    '/properties/s',
  ],
  ['schema_changed', props({ s: true }), props({ s: false }), '/properties/s'],
  [
    'type_narrowed',
    props({ list: { type: 'array', items: { type: ['string', 'number'] } } }),
    props({ list: { type: 'array', items: { type: 'string' } } }),
    '/properties/list/*',
  ],
  [
    'type_narrowed',
    props({ list: { type: 'array' } }),
    props({ list: { type: 'array', items: { type: 'string' } } }),
    '/properties/list/*',
  ],
  [
    'required_added',
    props({ a: props({ b: {} }) }),
    props({ a: props({ b: {} }, { required: ['b'] }) }),
    '/properties/a/b',
  ],
  [
    'type_narrowed',
    props({ a: {} }, { additionalProperties: { type: ['string', 'null'] } }),
    props({ a: {} }, { additionalProperties: { type: 'string' } }),
    '/properties/*',
  ],
];

describe('diffPlans: one fixture pair per change', () => {
  test.each(fixtures)('%s: %j -> %j', (code, before, after, path) => {
    const changes = diffPlans(planOf(rule(before)), planOf(rule(after)));
    expect(changes.map((c) => [c.change, c.path, c.kind])).toEqual([[code, path, changeKinds[code]]]);
    expect(changes[0]!.rule).toEqual({ type: 'track', name: 'Order Completed', version: 1 });
    expect(changes[0]!.message.length).toBeGreaterThan(0);
  });

  test('every change code has a fixture', () => {
    const covered = new Set([...fixtures.map(([code]) => code), 'rule_added', 'rule_removed']);
    expect(Object.keys(changeKinds).filter((code) => !covered.has(code as ChangeCode))).toEqual([]);
  });

  test('the kinds are SchemaVer`s', () => {
    expect(changeKinds).toMatchObject({
      rule_removed: 'breaking',
      rule_added: 'addition',
      required_added: 'breaking',
      required_removed: 'revision',
      property_added: 'addition',
      type_narrowed: 'breaking',
      type_widened: 'revision',
      enum_value_removed: 'breaking',
      enum_value_added: 'revision',
      additional_properties_tightened: 'breaking',
      schema_changed: 'breaking',
    });
  });
});

describe('diffPlans: rules and the common schema', () => {
  test('a rule added and a rule removed, told apart by type, name and version', () => {
    const before = planOf(rule({}), rule({}, { version: 2 }), { type: 'identify', schema: {} });
    const after = planOf(rule({}), rule({}, { version: 3 }), { type: 'page', name: 'Home', schema: {} });
    expect(diffPlans(before, after)).toEqual([
      {
        rule: { type: 'track', name: 'Order Completed', version: 2 },
        path: '',
        kind: 'breaking',
        change: 'rule_removed',
        message: 'track "Order Completed" v2 removed',
      },
      {
        rule: { type: 'identify', version: 1 },
        path: '',
        kind: 'breaking',
        change: 'rule_removed',
        message: 'identify v1 removed',
      },
      {
        rule: { type: 'track', name: 'Order Completed', version: 3 },
        path: '',
        kind: 'addition',
        change: 'rule_added',
        message: 'track "Order Completed" v3 added',
      },
      {
        rule: { type: 'page', name: 'Home', version: 1 },
        path: '',
        kind: 'addition',
        change: 'rule_added',
        message: 'page "Home" v1 added',
      },
    ]);
  });

  test('a plan against itself, or with keys in another order, has no change', () => {
    const plan = planOf(rule(props({ a: { type: 'string', enum: ['x'] } }, { required: ['a'] })));
    expect(diffPlans(plan, plan)).toEqual([]);
    expect(
      diffPlans(
        plan,
        JSON.parse(
          JSON.stringify(plan).replace('"type":"string","enum":["x"]', '"enum":["x"],"type":"string"'),
        ) as TrackingPlan,
      ),
    ).toEqual([]);
  });

  test('the common schema is diffed as a rule named common', () => {
    const changes = diffPlans({ rules: [] }, { common: { required: ['context'] }, rules: [] });
    expect(changes).toEqual([
      {
        rule: { type: 'common' },
        path: '/context',
        kind: 'breaking',
        change: 'required_added',
        message: 'context is now required',
      },
    ]);
    expect(
      diffPlans({ common: { required: ['context'] }, rules: [] }, { rules: [] }).map((c) => c.change),
    ).toEqual(['required_removed']);
  });

  test("a rule's description is an annotation", () => {
    expect(
      diffPlans(planOf(rule({})), planOf(rule({}, { description: 'why' }))).map((c) => [c.change, c.kind]),
    ).toEqual([['annotation_changed', 'addition']]);
  });

  test('a property added as required is one breaking change; to a closed object it is also a loosening', () => {
    expect(
      diffPlans(planOf(rule(props({}))), planOf(rule(props({ a: {} }, { required: ['a'] })))).map(
        (c) => c.change,
      ),
    ).toEqual(['required_added']);
    expect(
      diffPlans(
        planOf(rule(props({}, { additionalProperties: false }))),
        planOf(rule(props({ a: {} }, { additionalProperties: false }))),
      ).map((c) => [c.change, c.path]),
    ).toEqual([
      ['property_added', '/properties/a'],
      ['additional_properties_loosened', '/properties/a'],
    ]);
  });

  test('odd property names are escaped in paths', () => {
    const changes = diffPlans(
      planOf(rule(props({ 'a/b': {} }))),
      planOf(rule(props({ 'a/b': {}, '~': {} }, { required: ['a/b'] }))),
    );
    expect(changes.map((c) => c.path).sort()).toEqual(['/properties/a~1b', '/properties/~0']);
  });

  test('several changes at once, each reported', () => {
    const before = props(
      { a: { type: 'string', enum: ['x', 'y'] }, b: { type: 'number' } },
      { required: ['a'] },
    );
    const after = props({ a: { type: ['string', 'null'], enum: ['x'] }, c: {} }, { required: ['c'] });
    expect(diffPlans(planOf(rule(before)), planOf(rule(after))).map((c) => [c.change, c.path])).toEqual([
      ['required_added', '/properties/c'],
      ['required_removed', '/properties/a'],
      ['type_widened', '/properties/a'],
      ['enum_value_removed', '/properties/a'],
      ['property_removed', '/properties/b'],
    ]);
  });
});
