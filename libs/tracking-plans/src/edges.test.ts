import { checkPlan } from './plan-check';
import type { JsonSchema, TrackingPlan } from './plan-document';
import { compilePlan, type Violation } from './plan-validator';
import { nestingDepth, refProblems } from './schema-refs';
import { pointerOf, pointerTokens } from './json-pointer';

const meta = { planId: 'p', version: 1 };
const brief = (violations: Violation[]) => violations.map((v) => [v.code, v.path, v.keyword]);
const trackWith = (properties: JsonSchema, $schema?: string): TrackingPlan => ({
  rules: [
    { type: 'track', name: 'e', schema: { ...($schema ? { $schema } : {}), properties: { properties } } },
  ],
});
const event = (properties: Record<string, unknown>) => ({ type: 'track', event: 'e', properties });

describe('references and depth', () => {
  test.each([
    ['inside an array', { allOf: [{ $ref: 'http://x' }] }, [['ref_not_local', '/allOf/0/$ref']]],
    ['an anchor', { $ref: '#anchor' }, [['ref_not_local', '/$ref']]],
    ['an escaped pointer to nothing', { $ref: '#/a~1b' }, [['ref_unresolved', '/$ref']]],
    [
      'through a value that is not an object',
      { definitions: { a: 1 }, $ref: '#/definitions/a/b' },
      [['ref_unresolved', '/$ref']],
    ],
    ['to an inherited name', { $ref: '#/constructor' }, [['ref_unresolved', '/$ref']]],
    ['a $ref that is not text', { properties: { $ref: { type: 'string' } } }, []],
    ['to a sibling', { definitions: { a: { type: 'string' }, ab: { $ref: '#/definitions/a' } } }, []],
    [
      'to a prefix-named sibling',
      { definitions: { a: { $ref: '#/definitions/ab' }, ab: { type: 'string' } } },
      [],
    ],
  ])('%s', (_label, schema, expected) => {
    expect(refProblems(schema).map((p) => [p.code, p.path])).toEqual(expected);
  });

  test('depth counts objects and arrays, not values', () => {
    expect(nestingDepth(1)).toBe(0);
    expect(nestingDepth({})).toBe(1);
    expect(nestingDepth({ a: [1, { b: 'x' }] })).toBe(3);
    expect(nestingDepth([[], [[[]]]])).toBe(4);
  });

  test('JSON Pointer tokens', () => {
    expect(pointerTokens('')).toEqual([]);
    expect(pointerTokens('a')).toBeUndefined();
    expect(pointerTokens('/a~1b/~0/~01')).toEqual(['a/b', '~', '~1']);
    expect(pointerOf(['a/b', '~', 3])).toBe('/a~1b/~0/3');
  });
});

describe('violations of more keywords', () => {
  test('draft-07 dependencies and 2020-12 dependentRequired are missing_required at the missing property', () => {
    const draft07 = compilePlan(trackWith({ dependencies: { a: ['b'] } }), meta);
    expect(brief(draft07.validate(event({ a: 1 })))).toEqual([
      ['missing_required', '/properties/b', 'dependencies'],
    ]);
    const draft2020 = compilePlan(
      trackWith({ dependentRequired: { a: ['b'] } }, 'https://json-schema.org/draft/2020-12/schema'),
      meta,
    );
    expect(brief(draft2020.validate(event({ a: 1 })))).toEqual([
      ['missing_required', '/properties/b', 'dependentRequired'],
    ]);
  });

  test('2020-12 unevaluatedProperties is unplanned_property at the property', () => {
    const compiled = compilePlan(
      trackWith(
        { properties: { a: {} }, unevaluatedProperties: false },
        'https://json-schema.org/draft/2020-12/schema',
      ),
      meta,
    );
    expect(brief(compiled.validate(event({ a: 1, 'b/c': 2 })))).toEqual([
      ['unplanned_property', '/properties/b~1c', 'unevaluatedProperties'],
    ]);
  });

  test("an if's own error is left out; its branch's errors say why", () => {
    const compiled = compilePlan(
      trackWith({ if: { required: ['a'] }, then: { required: ['b'] }, else: { required: ['c'] } }),
      meta,
    );
    expect(brief(compiled.validate(event({ a: 1 })))).toEqual([
      ['missing_required', '/properties/b', 'required'],
    ]);
    expect(brief(compiled.validate(event({})))).toEqual([['missing_required', '/properties/c', 'required']]);
  });

  test('the same failure reached twice is one violation', () => {
    const compiled = compilePlan(trackWith({ allOf: [{ required: ['a'] }, { required: ['a'] }] }), meta);
    expect(brief(compiled.validate(event({})))).toEqual([['missing_required', '/properties/a', 'required']]);
  });

  test('oneOf matched twice, or failed below the value, is value_not_allowed', () => {
    const twice = compilePlan(
      trackWith({ properties: { a: { oneOf: [{ type: 'number' }, { type: 'integer' }] } } }),
      meta,
    );
    expect(brief(twice.validate(event({ a: 1 })))).toEqual([['value_not_allowed', '/properties/a', 'oneOf']]);
    const deeper = compilePlan(
      trackWith({
        properties: { a: { anyOf: [{ properties: { x: { type: 'string' } } }, { type: 'string' }] } },
      }),
      meta,
    );
    expect(brief(deeper.validate(event({ a: { x: 1 } })))).toEqual([
      ['value_not_allowed', '/properties/a', 'anyOf'],
    ]);
    const types = compilePlan(
      trackWith({ properties: { a: { anyOf: [{ type: 'string' }, { type: 'boolean' }] } } }),
      meta,
    );
    expect(types.validate(event({ a: 1 }))[0]?.message).toBe('/properties/a must be string or boolean');
  });

  test('propertyNames sums up its inner errors, at the refused key', () => {
    const compiled = compilePlan(trackWith({ propertyNames: { pattern: '^[a-z]+$' } }), meta);
    expect(brief(compiled.validate(event({ ok: 1, 'Not~OK': 2 })))).toEqual([
      ['unplanned_property', '/properties/Not~0OK', 'propertyNames'],
    ]);
  });

  test('a common schema failure keeps its keyword, whatever its kind', () => {
    const compiled = compilePlan(
      {
        common: {
          properties: { context: { additionalProperties: false, properties: { app: { type: 'object' } } } },
        },
        rules: [],
      },
      meta,
    );
    expect(compiled.validate({ type: 'identify', context: { app: 1, extra: 2 } })).toEqual([
      {
        code: 'common_schema',
        path: '/context/extra',
        keyword: 'additionalProperties',
        message: '/context/extra must NOT have additional properties',
      },
      {
        code: 'common_schema',
        path: '/context/app',
        keyword: 'type',
        message: '/context/app must be object',
      },
    ]);
  });

  test('a page name that is not text is read as no name; an unknown type meets only the common schema', () => {
    const compiled = compilePlan(
      { common: { required: ['context'] }, rules: [{ type: 'page', schema: { required: ['properties'] } }] },
      meta,
    );
    expect(brief(compiled.validate({ type: 'page', name: 5, context: {} }))).toEqual([
      ['missing_required', '/properties', 'required'],
    ]);
    expect(brief(compiled.validate({ type: 'other' }))).toEqual([['common_schema', '/context', 'required']]);
    expect(compiled.validate({ type: 'other', context: {} })).toEqual([]);
  });

  test('a pinned version that exists is used without a flag, the latest otherwise', () => {
    const compiled = compilePlan(
      {
        rules: [
          { type: 'identify', version: 1, schema: { required: ['a'] } },
          { type: 'identify', version: 2, schema: { required: ['b'] } },
        ],
      },
      meta,
    );
    expect(brief(compiled.validate({ type: 'identify' }, 1))).toEqual([
      ['missing_required', '/a', 'required'],
    ]);
    expect(brief(compiled.validate({ type: 'identify' }))).toEqual([['missing_required', '/b', 'required']]);
    expect(brief(compiled.validate({ type: 'identify' }, 3))).toEqual([
      ['unknown_pinned_version', '/context/protocols/event_version', 'rule'],
      ['missing_required', '/b', 'required'],
    ]);
  });
});

describe('checkPlan on the whole', () => {
  test('problems of the common schema and of rules together, the plan not sized when they exist', () => {
    const result = checkPlan({
      common: { $ref: 'http://x' },
      rules: [{ type: 'group', schema: { type: 'x' } }],
    });
    expect(result.ok ? [] : result.problems.map((p) => [p.code, p.path])).toEqual([
      ['ref_not_local', '/common/$ref'],
      ['schema_invalid', '/rules/0/schema'],
    ]);
  });

  test('a 2020-12 common schema and draft-07 rules share a plan', () => {
    const plan = {
      common: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        properties: { context: { type: 'object' } },
      },
      rules: [
        {
          type: 'group' as const,
          schema: { $schema: 'http://json-schema.org/draft-07/schema#', required: ['traits'] },
        },
      ],
    };
    expect(checkPlan(plan)).toEqual({ ok: true, plan });
    expect(brief(compilePlan(plan, meta).validate({ type: 'group', context: 1 }))).toEqual([
      ['common_schema', '/context', 'type'],
      ['missing_required', '/traits', 'required'],
    ]);
  });
});
