import { changeKinds, diffPlans, type ChangeCode } from './plan-diff';
import { checkPlan } from './plan-check';
import { planCaps, type JsonSchema } from './plan-document';
import { compilePlan, InvalidTrackingPlan } from './plan-validator';
import { exportSegmentRules, importSegmentRules } from './formats/segment';
import { importRudderCliProject } from './formats/rudderstack';

// What people read: every message of every problem, violation and change, held to its text so
// that a reworded message is a reviewed change.

const problems = (input: unknown) => {
  const result = checkPlan(input);
  return result.ok ? [] : result.problems;
};
const group = (schema: JsonSchema) => ({ rules: [{ type: 'group', schema }] });

test('plan problems', () => {
  const nested = (levels: number) => {
    let schema: JsonSchema = {};
    for (let i = 1; i < levels; i++) schema = { not: schema };
    return schema;
  };
  expect([
    ...problems({
      rules: [
        { type: 'track', schema: {} },
        { type: 'alias', name: 'a', schema: {} },
      ],
    }),
    ...problems(group({ $ref: '#/nowhere' })),
    ...problems(group({ properties: { a: { $ref: '#' } } })),
    ...problems(group({ $ref: '#/definitions/%E0%A4%A' })),
    ...problems(group({ pattern: '(?=a)' })),
    ...problems(group({ pattern: 'a'.repeat(planCaps.maxPatternLength + 1) })),
    ...problems(group({ type: 'nope' })),
    ...problems(group({ [`x${'y'.repeat(600)}`]: 1 })),
    ...problems(group(nested(planCaps.maxSchemaDepth + 1))),
    ...problems({ rules: [], extra: 1 }),
    ...problems({ rules: [{ type: 'group', schema: {}, version: 'one' }] }),
  ]).toMatchSnapshot();
});

test('a plan over the byte cap', () => {
  const description = 'd'.repeat(planCaps.maxSchemaBytes - 100);
  const rules = Array.from({ length: 17 }, (_, i) => ({
    type: 'track',
    name: `e${i}`,
    schema: { description },
  }));
  expect(problems({ rules })).toMatchSnapshot();
});

test('compilePlan refuses more rules than the cap, as checkPlan does', () => {
  const rules = Array.from({ length: planCaps.maxRules + 1 }, (_, i) => ({
    type: 'track' as const,
    name: `e${i}`,
    schema: {},
  }));
  expect(() => compilePlan({ rules }, { planId: 'p', version: 1 })).toThrow(InvalidTrackingPlan);
  try {
    compilePlan({ rules }, { planId: 'p', version: 1 });
  } catch (error) {
    expect((error as InvalidTrackingPlan).problems).toEqual([
      {
        code: 'too_many_rules',
        path: '/rules',
        message: `plan has ${planCaps.maxRules + 1} rules; at most ${planCaps.maxRules} are accepted`,
      },
    ]);
  }
});

test('violations', () => {
  const validator = compilePlan(
    {
      common: { properties: { context: { required: ['app'] } } },
      rules: [
        {
          type: 'track',
          name: 'e',
          schema: {
            properties: {
              properties: {
                additionalProperties: false,
                required: ['a'],
                properties: {
                  a: { type: 'string' },
                  b: { oneOf: [{ type: 'string' }, { type: 'integer' }] },
                  c: { not: {} },
                  d: { anyOf: [{ minimum: 3 }, { maximum: 1 }] },
                  e: false,
                },
                propertyNames: { maxLength: 5 },
              },
            },
          },
        },
        { type: 'screen', name: 'Home', schema: {} },
      ],
    },
    { planId: 'p', version: 1 },
  );
  expect([
    ...validator.validate(
      { type: 'track', event: 'e', properties: { b: true, c: 1, d: 2, e: 1, toolong: 1 }, context: {} },
      5,
    ),
    ...validator.validate({ type: 'track', event: 42, context: { app: 1 } }),
    ...validator.validate({ type: 'screen', name: 'Cart', context: { app: 1 } }),
    ...validator.validate({ type: 'screen', context: { app: 1 } }),
  ]).toMatchSnapshot();
});

test('changes', () => {
  const rule = (properties: JsonSchema) => ({
    rules: [{ type: 'track' as const, name: 'e', schema: { properties: { properties } } }],
  });
  const pairs: [JsonSchema, JsonSchema][] = [
    [{ properties: { a: { type: 'string' } } }, { properties: { a: { type: 'integer' } } }],
    [{ properties: { a: { type: 'integer' } } }, { properties: { a: { type: 'number' } } }],
    [{ properties: { a: { type: 'number' } } }, { properties: { a: { type: 'integer' } } }],
    [{ properties: { a: { enum: [1, 2] } } }, { properties: { a: { enum: [2, 3] } } }],
    [{ properties: { a: {} } }, { properties: { a: { enum: [1] } } }],
    [{ properties: { a: { enum: [1] } } }, { properties: { a: {} } }],
    [{ properties: { a: {} } }, { properties: { a: { const: 1 } } }],
    [{ properties: { a: { const: 1 } } }, { properties: { a: {} } }],
    [
      { properties: { a: { minimum: 1, maxLength: 3 } } },
      { properties: { a: { minimum: 2, maxLength: 4 } } },
    ],
    [{ properties: { a: { multipleOf: 2 } } }, { properties: { a: { multipleOf: 3 } } }],
    [{ properties: { a: { pattern: 'x', format: 'email' } } }, { properties: { a: { pattern: 'y' } } }],
    [
      { properties: { a: {} }, required: ['a'] },
      { properties: { b: {} }, additionalProperties: false },
    ],
    [{ properties: { a: { anyOf: [] } } }, { properties: { a: { anyOf: [{}], description: 'd' } } }],
    [{ additionalProperties: { type: 'string' } }, {}],
    [{ additionalProperties: true }, { additionalProperties: { type: 'string' } }],
    [{ properties: { a: true } }, { properties: { a: { type: 'string' } } }],
  ];
  const changes = pairs.flatMap(([a, b]) => diffPlans(rule(a), rule(b)));
  expect(changes.map((c) => `${c.kind} ${c.change} ${c.path}: ${c.message}`)).toMatchSnapshot();
  expect(changes.every((c) => c.kind === changeKinds[c.change as ChangeCode])).toBe(true);
  expect(
    diffPlans(
      { rules: [{ type: 'group', schema: {} }] },
      { rules: [{ type: 'group', description: 'x', schema: {} }] },
    ),
  ).toMatchSnapshot();
});

test('format problems', () => {
  expect([
    importSegmentRules({
      rules: [{ type: 'TRACK', version: 1, jsonSchema: {}, deprecatedAt: 'x', other: 1 }],
    }),
    importSegmentRules({
      rules: [
        { type: 'COMMON', key: 'k', version: 2, jsonSchema: {} },
        { type: 'COMMON', version: 1, jsonSchema: {} },
      ],
    }),
    importSegmentRules({
      rules: [
        { type: 'IDENTIFY', key: 'k', version: 1.5, jsonSchema: [] },
        { type: 'PAGE', key: '', version: 1, jsonSchema: {} },
        3,
        { type: 'X' },
      ],
    }),
    importSegmentRules({ data: { rules: null } }),
    exportSegmentRules({
      rules: [
        { type: 'alias', schema: {} },
        { type: 'page', description: 'd', schema: {} },
      ],
    }),
    importRudderCliProject([
      'version: rudder/0.1\nkind: events\nmetadata: {name: ev}\nspec:\n  events:\n    - id: a\n      event_type: track\n    - name: no id\n    - id: b\n      event_type: alias\n',
      'version: rudder/0.1\nkind: properties\nmetadata: {name: pr}\nspec:\n  properties:\n    - id: p\n      type: money\n      config: {itemTypes: [], weird: 1}\n    - id: q\n      name: q\n      config: 3\n    - id: nameless\n',
      'version: rudder/0.1\nkind: tp\nmetadata: {name: tp}\nspec:\n  rules:\n    - type: event_rule\n      event: {$ref: "#/events/ev/a"}\n    - type: event_rule\n      event: "#/events/ev/b"\n    - type: event_rule\n      allow_unplanned: "no"\n      event: {$ref: "#/events/ev/a"}\n    - type: event_rule\n      event: {$ref: "#/events/ev/a"}\n      properties:\n        - $ref: "#/properties/pr/p"\n        - $ref: "#/properties/pr/q"\n        - $ref: "#/properties/pr/nameless"\n        - 7\n    - type: event_rule\n      event: {$ref: "#/events/ev/a"}\n      properties: {}\n    - 5\n',
      'version: rudder/0.1\nkind: events\nmetadata: {name: x}\nspec: {events: 1}\n',
      'version: rudder/0.1\nkind: properties\nmetadata: {name: y}\nspec: {properties: 1}\n',
      'version: rudder/0.1\nkind: thing\nspec: {}\n',
      'version: 2\nkind: tp\nspec: {}\n',
      'just text',
      '{',
    ]),
    importRudderCliProject(['version: rudder/0.1\nkind: tp\nmetadata: {name: t}\nspec: {rules: 1}\n']),
  ]).toMatchSnapshot();
});
