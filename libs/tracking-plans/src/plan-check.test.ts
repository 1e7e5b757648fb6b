import { checkPlan } from './plan-check';
import { planCaps, type PlanRule, type TrackingPlan } from './plan-document';

const track = (
  name: string,
  properties: Record<string, unknown> = {},
  extra: Partial<PlanRule> = {},
): PlanRule => ({
  type: 'track',
  name,
  schema: { type: 'object', properties: { properties: { type: 'object', properties } } },
  ...extra,
});

const problemsOf = (input: unknown) => {
  const result = checkPlan(input);
  return result.ok ? [] : result.problems;
};
const codesOf = (input: unknown) => problemsOf(input).map((p) => [p.code, p.path]);

describe('checkPlan accepts', () => {
  test('a plan of every rule type, versions and a common schema, returned as given', () => {
    const plan: TrackingPlan = {
      common: { type: 'object', required: ['context'] },
      rules: [
        track('Order Completed', { order_id: { type: 'string' } }),
        track('Order Completed', {}, { version: 2, description: 'v2' }),
        { type: 'identify', schema: { properties: { traits: { required: ['email'] } } } },
        { type: 'group', schema: {} },
        { type: 'page', schema: {} },
        { type: 'page', name: 'Pricing', schema: {} },
        { type: 'screen', name: 'Home', schema: {} },
        { type: 'alias', version: 3, schema: {} },
      ],
    };
    expect(checkPlan(plan)).toEqual({ ok: true, plan });
  });

  test.each([
    ['draft-07', 'http://json-schema.org/draft-07/schema#'],
    ['draft-07 without #', 'http://json-schema.org/draft-07/schema'],
    ['2020-12', 'https://json-schema.org/draft/2020-12/schema'],
  ])('a schema in %s', (_label, $schema) => {
    expect(
      problemsOf({ rules: [track('a', {}, {}), { type: 'group', schema: { $schema, type: 'object' } }] }),
    ).toEqual([]);
  });

  test('2020-12 keywords under 2020-12, refused under draft-07', () => {
    const schema = { type: 'object', properties: { a: {} }, unevaluatedProperties: false };
    expect(
      problemsOf({
        rules: [
          { type: 'group', schema: { $schema: 'https://json-schema.org/draft/2020-12/schema', ...schema } },
        ],
      }),
    ).toEqual([]);
    expect(codesOf({ rules: [{ type: 'group', schema }] })).toEqual([['schema_invalid', '/rules/0/schema']]);
  });

  test("Segment's labels annotation, formats, and local references", () => {
    const schema = {
      labels: { team: 'growth' },
      definitions: { id: { type: 'string', format: 'uuid' } },
      properties: {
        properties: { properties: { a: { $ref: '#/definitions/id' }, b: { format: 'date-time' } } },
      },
    };
    expect(problemsOf({ rules: [track('a'), { type: 'identify', schema }] })).toEqual([]);
  });

  test('full Unicode names and odd keys', () => {
    const plan = {
      rules: [track('注文 完了 😀', { constructor: { type: 'string' }, 'a/b~c': {}, '': {}, toString: {} })],
    };
    expect(problemsOf(plan)).toEqual([]);
  });
});

describe('checkPlan refuses', () => {
  test.each([
    ['not an object', null, [['invalid_document', '']]],
    ['no rules', {}, [['invalid_document', '/rules']]],
    ['an unknown member', { rules: [], owner: 'x' }, [['invalid_document', '/owner']]],
    [
      'an unknown rule type',
      { rules: [{ type: 'COMMON', schema: {} }] },
      [['invalid_document', '/rules/0/type']],
    ],
    ['a rule without a schema', { rules: [{ type: 'group' }] }, [['invalid_document', '/rules/0/schema']]],
    [
      'a schema that is not an object',
      { rules: [{ type: 'group', schema: true }] },
      [['invalid_document', '/rules/0/schema']],
    ],
    [
      'version 0',
      { rules: [{ type: 'group', version: 0, schema: {} }] },
      [['invalid_document', '/rules/0/version']],
    ],
    [
      'version 1.5',
      { rules: [{ type: 'group', version: 1.5, schema: {} }] },
      [['invalid_document', '/rules/0/version']],
    ],
    [
      'an empty name',
      { rules: [{ type: 'track', name: '', schema: {} }] },
      [['invalid_document', '/rules/0/name']],
    ],
    ['a key with / named escaped', { rules: [], 'a/b': 1 }, [['invalid_document', '/a~1b']]],
  ])('%s', (_label, input, expected) => {
    const problems = problemsOf(input);
    expect(problems.map((p) => [p.code, p.path]).slice(0, 1)).toEqual(expected);
    expect(problems.every((p) => p.message.length > 0)).toBe(true);
  });

  test('a track rule without a name; a name on identify, group or alias', () => {
    expect(
      codesOf({
        rules: [
          { type: 'track', schema: {} },
          { type: 'identify', name: 'x', schema: {} },
          { type: 'group', name: 'x', schema: {} },
          { type: 'alias', name: 'x', schema: {} },
          { type: 'page', name: 'x', schema: {} },
        ],
      }),
    ).toEqual([
      ['rule_name_required', '/rules/0/name'],
      ['rule_name_not_allowed', '/rules/1/name'],
      ['rule_name_not_allowed', '/rules/2/name'],
      ['rule_name_not_allowed', '/rules/3/name'],
    ]);
  });

  test('the same type, name and version twice (no version is version 1)', () => {
    const problems = problemsOf({
      rules: [
        track('a'),
        track('a', {}, { version: 1 }),
        track('a', {}, { version: 2 }),
        track('b'),
        { type: 'page', schema: {} },
        { type: 'page', schema: {} },
      ],
    });
    expect(problems).toEqual([
      { code: 'duplicate_rule', path: '/rules/1', message: 'track "a" v1 is in the plan twice' },
      { code: 'duplicate_rule', path: '/rules/5', message: 'page v1 is in the plan twice' },
    ]);
  });

  test('a property named __proto__, which ajv would skip', () => {
    const plan = JSON.parse(
      '{"rules":[{"type":"track","name":"a","schema":{"properties":{"properties":{"properties":{"__proto__":{"type":"string"}}}}}}]}',
    ) as unknown;
    expect(problemsOf(plan)).toEqual([
      {
        code: 'property_name_unsupported',
        path: '/rules/0/schema/properties/properties/properties/__proto__',
        message:
          'a property named __proto__ cannot be planned (the validator ignores it; events that send it see it as unplanned)',
      },
    ]);
  });

  test('a dialect other than draft-07 and 2020-12', () => {
    expect(
      problemsOf({
        rules: [{ type: 'group', schema: { $schema: 'http://json-schema.org/draft-04/schema#' } }],
      }),
    ).toEqual([
      {
        code: 'unsupported_dialect',
        path: '/rules/0/schema/$schema',
        message: '$schema "http://json-schema.org/draft-04/schema#" is not draft-07 or 2020-12',
      },
    ]);
  });

  test.each([
    ['a misspelled keyword', { requird: ['a'] }],
    ['a keyword of the wrong type', { required: 'a' }],
    ['an unknown format', { format: 'no-such-format' }],
    ['a type that does not exist', { type: 'text' }],
  ])('a schema ajv refuses: %s', (_label, schema) => {
    const [problem, ...rest] = problemsOf({ rules: [{ type: 'group', schema }] });
    expect(rest).toEqual([]);
    expect(problem?.code).toBe('schema_invalid');
    expect(problem?.path).toBe('/rules/0/schema');
    expect(problem?.message).toMatch(/^schema does not compile: /);
  });

  test('the common schema is checked like a rule', () => {
    expect(codesOf({ common: { requird: [] }, rules: [] })).toEqual([['schema_invalid', '/common']]);
  });

  test.each([
    ['remote', { $ref: 'https://example.com/schema.json' }, 'ref_not_local', '/rules/0/schema/$ref'],
    [
      'relative file',
      { properties: { a: { $ref: 'other.json#/x' } } },
      'ref_not_local',
      '/rules/0/schema/properties/a/$ref',
    ],
    ['dynamic', { $dynamicRef: '#meta' }, 'ref_not_local', '/rules/0/schema/$dynamicRef'],
    ['recursive', { $recursiveRef: '#' }, 'ref_not_local', '/rules/0/schema/$recursiveRef'],
    ['to nothing', { $ref: '#/definitions/missing' }, 'ref_unresolved', '/rules/0/schema/$ref'],
    [
      'to itself through the root',
      { properties: { a: { $ref: '#' } } },
      'ref_cycle',
      '/rules/0/schema/properties/a/$ref',
    ],
  ])('a $ref %s', (_label, schema, code, path) => {
    expect(codesOf({ rules: [{ type: 'group', schema }] })).toEqual([[code, path]]);
  });

  test('a cycle through two definitions names both references; a chain without a cycle passes', () => {
    const cyclic = {
      definitions: { a: { $ref: '#/definitions/b' }, b: { items: { $ref: '#/definitions/a' } } },
      $ref: '#/definitions/a',
    };
    expect(codesOf({ rules: [{ type: 'group', schema: cyclic }] }).sort()).toEqual([
      ['ref_cycle', '/rules/0/schema/definitions/a/$ref'],
      ['ref_cycle', '/rules/0/schema/definitions/b/items/$ref'],
    ]);
    const chain = {
      definitions: { a: { $ref: '#/definitions/b' }, b: { type: 'string' } },
      properties: { x: { $ref: '#/definitions/a' } },
    };
    expect(problemsOf({ rules: [{ type: 'group', schema: chain }] })).toEqual([]);
  });

  test('a reference with an escaped pointer resolves', () => {
    const schema = {
      definitions: { 'a/b': { type: 'string' }, 'c d': { type: 'string' } },
      properties: { x: { $ref: '#/definitions/a~1b' }, y: { $ref: '#/definitions/c%20d' } },
    };
    expect(problemsOf({ rules: [{ type: 'group', schema }] })).toEqual([]);
  });

  test.each([
    ['look-ahead', '^(?!admin).*$'],
    ['look-behind', '(?<=a)b'],
    ['a backreference', '(a)\\1'],
  ])('a pattern with %s (RE2 cannot run it)', (_label, pattern) => {
    const [problem] = problemsOf({
      rules: [{ type: 'group', schema: { properties: { traits: { properties: { role: { pattern } } } } } }],
    });
    expect(problem?.code).toBe('pattern_unsupported');
    expect(problem?.path).toBe('/rules/0/schema');
    expect(problem?.message).toContain('RE2');
  });

  test('a pattern longer than the cap, in patternProperties too', () => {
    const long = 'a'.repeat(planCaps.maxPatternLength + 1);
    expect(codesOf({ rules: [{ type: 'group', schema: { pattern: long } }] })).toEqual([
      ['pattern_unsupported', '/rules/0/schema'],
    ]);
    expect(
      codesOf({ rules: [{ type: 'group', schema: { patternProperties: { [long]: { type: 'string' } } } }] }),
    ).toEqual([['pattern_unsupported', '/rules/0/schema']]);
    expect(problemsOf({ rules: [{ type: 'group', schema: { pattern: long.slice(1) } }] })).toEqual([]);
  });
});

describe('caps', () => {
  test('rules: the cap passes, one more is refused before anything else is read', () => {
    const rules = Array.from({ length: planCaps.maxRules }, (_, i) => ({
      type: 'track',
      name: `e${i}`,
      schema: {},
    }));
    expect(problemsOf({ rules })).toEqual([]);
    expect(problemsOf({ rules: [...rules, { type: 'nonsense' }] })).toEqual([
      {
        code: 'too_many_rules',
        path: '/rules',
        message: `plan has ${planCaps.maxRules + 1} rules; at most ${planCaps.maxRules} are accepted`,
      },
    ]);
  });

  /** A schema whose canonical JSON is exactly `bytes` long. */
  const schemaOf = (bytes: number) => {
    const frame = JSON.stringify({ description: '' }).length;
    return { description: 'd'.repeat(bytes - frame) };
  };

  test('schema bytes: the cap passes, one more byte is refused', () => {
    expect(JSON.stringify(schemaOf(planCaps.maxSchemaBytes)).length).toBe(planCaps.maxSchemaBytes);
    expect(problemsOf({ rules: [{ type: 'group', schema: schemaOf(planCaps.maxSchemaBytes) }] })).toEqual([]);
    expect(problemsOf({ common: schemaOf(planCaps.maxSchemaBytes + 1), rules: [] })).toEqual([
      {
        code: 'schema_too_large',
        path: '/common',
        message: `schema is ${planCaps.maxSchemaBytes + 1} bytes; at most ${planCaps.maxSchemaBytes} are accepted`,
      },
    ]);
  });

  test('bytes are UTF-8 bytes, not characters', () => {
    const frame = JSON.stringify({ description: '' }).length;
    const schema = { description: 'é'.repeat((planCaps.maxSchemaBytes - frame) / 2 + 1) };
    expect(codesOf({ rules: [{ type: 'group', schema }] })).toEqual([
      ['schema_too_large', '/rules/0/schema'],
    ]);
  });

  test('plan bytes: a plan over the cap is refused even when each schema is under its own', () => {
    const count = Math.ceil(planCaps.maxPlanBytes / planCaps.maxSchemaBytes) + 1;
    const rules = Array.from({ length: count }, (_, i) => ({
      type: 'track',
      name: `e${i}`,
      schema: schemaOf(planCaps.maxSchemaBytes - 10),
    }));
    const [problem, ...rest] = problemsOf({ rules });
    expect(rest).toEqual([]);
    expect(problem?.code).toBe('plan_too_large');
    expect(problem?.path).toBe('');
    const fits = rules.slice(0, Math.floor(planCaps.maxPlanBytes / planCaps.maxSchemaBytes) - 1);
    expect(problemsOf({ rules: fits })).toEqual([]);
  });

  test('depth: the cap passes; deeper is refused without recursing', () => {
    const nested = (levels: number) => {
      let schema: Record<string, unknown> = {};
      for (let i = 1; i < levels; i++) schema = { not: schema };
      return schema;
    };
    expect(problemsOf({ rules: [{ type: 'group', schema: nested(planCaps.maxSchemaDepth) }] })).toEqual([]);
    expect(codesOf({ rules: [{ type: 'group', schema: nested(planCaps.maxSchemaDepth + 1) }] })).toEqual([
      ['schema_too_deep', '/rules/0/schema'],
    ]);
    expect(codesOf({ common: nested(200_000), rules: [] })).toEqual([['schema_too_deep', '/common']]);
  });

  test('every refused rule is named at once', () => {
    expect(
      codesOf({
        rules: [
          { type: 'track', schema: {} },
          { type: 'group', schema: { $ref: 'http://x' } },
          track('ok'),
          { type: 'page', schema: { type: 'nope' } },
        ],
      }),
    ).toEqual([
      ['rule_name_required', '/rules/0/name'],
      ['ref_not_local', '/rules/1/schema/$ref'],
      ['schema_invalid', '/rules/3/schema'],
    ]);
  });
});
