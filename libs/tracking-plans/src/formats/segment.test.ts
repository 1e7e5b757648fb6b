import { checkPlan } from '../plan-check';
import { exportSegmentRules, importSegmentRules, type SegmentRules } from './segment';

const draft07 = 'http://json-schema.org/draft-07/schema#';
/** Rules as Segment's Public API lists them (timestamps left out: see below). */
const fixture: SegmentRules = {
  rules: [
    {
      type: 'COMMON',
      version: 1,
      jsonSchema: {
        $schema: draft07,
        type: 'object',
        properties: { context: { type: 'object', required: ['app'] } },
      },
    },
    {
      type: 'TRACK',
      key: 'Order Completed',
      version: 1,
      jsonSchema: {
        $schema: draft07,
        type: 'object',
        labels: { team: 'checkout' },
        properties: {
          properties: {
            type: 'object',
            required: ['order_id'],
            properties: { order_id: { type: 'string', description: 'Order id' }, total: { type: 'number' } },
          },
        },
        required: ['properties'],
      },
    },
    {
      type: 'TRACK',
      key: 'Order Completed',
      version: 2,
      jsonSchema: {
        $schema: draft07,
        type: 'object',
        properties: { properties: { required: ['order_id', 'total'] } },
      },
    },
    {
      type: 'IDENTIFY',
      version: 1,
      jsonSchema: { $schema: draft07, properties: { traits: { required: ['email'] } } },
    },
    { type: 'GROUP', version: 1, jsonSchema: { $schema: draft07, properties: { traits: {} } } },
    { type: 'PAGE', key: 'Pricing', version: 1, jsonSchema: { $schema: draft07 } },
    { type: 'PAGE', version: 1, jsonSchema: { $schema: draft07 } },
    { type: 'SCREEN', key: '注文 😀', version: 3, jsonSchema: { $schema: draft07 } },
  ],
};

describe('importSegmentRules', () => {
  test('maps every rule type, and the plan passes checkPlan', () => {
    const imported = importSegmentRules(fixture);
    if (!imported.ok) throw new Error(JSON.stringify(imported.problems));
    expect(imported.value.common).toBe(fixture.rules[0]!.jsonSchema);
    expect(imported.value.rules.map((r) => [r.type, r.name, r.version])).toEqual([
      ['track', 'Order Completed', 1],
      ['track', 'Order Completed', 2],
      ['identify', undefined, 1],
      ['group', undefined, 1],
      ['page', 'Pricing', 1],
      ['page', undefined, 1],
      ['screen', '注文 😀', 3],
    ]);
    expect(checkPlan(imported.value).ok).toBe(true);
  });

  test('then export gives back the same rules', () => {
    const imported = importSegmentRules(fixture);
    if (!imported.ok) throw new Error('import failed');
    expect(exportSegmentRules(imported.value)).toEqual({ ok: true, value: fixture });
  });

  test("the API's answer, wrapped in data, and the server's timestamps are read past", () => {
    const answer = {
      data: {
        rules: [
          {
            type: 'TRACK',
            key: 'a',
            version: 1,
            jsonSchema: {},
            createdAt: '2026-01-01T00:00:00Z',
            updatedAt: '2026-01-02T00:00:00Z',
          },
        ],
      },
    };
    expect(importSegmentRules(answer)).toEqual({
      ok: true,
      value: { rules: [{ type: 'track', name: 'a', version: 1, schema: {} }] },
    });
  });

  test.each([
    ['not a rule list', { rules: 'x' }, [['invalid_input', '/rules']]],
    ['not a rule list, wrapped', { data: {} }, [['invalid_input', '/data/rules']]],
    ['a rule that is no object', { rules: [1] }, [['invalid_input', '/rules/0']]],
    [
      'an unknown type',
      { rules: [{ type: 'ALIAS', version: 1, jsonSchema: {} }] },
      [['invalid_input', '/rules/0/type']],
    ],
    [
      'a deprecated rule',
      { rules: [{ type: 'GROUP', version: 1, jsonSchema: {}, deprecatedAt: '2026-01-01' }] },
      [['not_mappable', '/rules/0/deprecatedAt']],
    ],
    [
      'an unknown member',
      { rules: [{ type: 'GROUP', version: 1, jsonSchema: {}, owner: 'x' }] },
      [['not_mappable', '/rules/0/owner']],
    ],
    [
      'version 0',
      { rules: [{ type: 'GROUP', version: 0, jsonSchema: {} }] },
      [['invalid_input', '/rules/0/version']],
    ],
    [
      'a null jsonSchema',
      { rules: [{ type: 'GROUP', version: 1, jsonSchema: null }] },
      [['invalid_input', '/rules/0/jsonSchema']],
    ],
    [
      'a key that is no text',
      { rules: [{ type: 'PAGE', key: 3, version: 1, jsonSchema: {} }] },
      [['invalid_input', '/rules/0/key']],
    ],
    [
      'a TRACK without key',
      { rules: [{ type: 'TRACK', version: 1, jsonSchema: {} }] },
      [['invalid_input', '/rules/0/key']],
    ],
    [
      'a TRACK with an empty key',
      { rules: [{ type: 'TRACK', key: '', version: 1, jsonSchema: {} }] },
      [
        ['invalid_input', '/rules/0/key'],
        ['not_mappable', '/rules/0/key'],
      ],
    ],
    [
      'an IDENTIFY with a key',
      { rules: [{ type: 'IDENTIFY', key: 'x', version: 1, jsonSchema: {} }] },
      [['not_mappable', '/rules/0/key']],
    ],
    [
      'a COMMON with a key',
      { rules: [{ type: 'COMMON', key: 'x', version: 1, jsonSchema: {} }] },
      [['not_mappable', '/rules/0/key']],
    ],
    [
      'a COMMON version 2',
      { rules: [{ type: 'COMMON', version: 2, jsonSchema: {} }] },
      [['not_mappable', '/rules/0/version']],
    ],
    [
      'two COMMON rules',
      {
        rules: [
          { type: 'COMMON', version: 1, jsonSchema: {} },
          { type: 'COMMON', version: 1, jsonSchema: {} },
        ],
      },
      [['not_mappable', '/rules/1']],
    ],
  ])('refuses %s', (_label, input, expected) => {
    const result = importSegmentRules(input);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.problems.map((p) => [p.code, p.path])).toEqual(expected);
      expect(result.problems.every((p) => p.message.length > 0)).toBe(true);
    }
  });
});

describe('exportSegmentRules', () => {
  test('version 1 when a rule has none; no COMMON without a common schema', () => {
    expect(exportSegmentRules({ rules: [{ type: 'track', name: 'a', schema: {} }] })).toEqual({
      ok: true,
      value: { rules: [{ type: 'TRACK', key: 'a', version: 1, jsonSchema: {} }] },
    });
  });

  test('refuses alias rules and descriptions, naming each', () => {
    expect(
      exportSegmentRules({
        rules: [
          { type: 'alias', schema: {} },
          { type: 'track', name: 'a', description: 'why', schema: {} },
        ],
      }),
    ).toEqual({
      ok: false,
      problems: [
        { code: 'not_mappable', path: '/rules/0/type', message: 'Segment has no alias rules' },
        {
          code: 'not_mappable',
          path: '/rules/1/description',
          message: "Segment's rules have no description: move it into the schema's own description",
        },
      ],
    });
  });
});
