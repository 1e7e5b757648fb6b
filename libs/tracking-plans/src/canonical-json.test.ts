import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { canonicalJson, planHash } from './canonical-json';
import type { TrackingPlan } from './plan-document';

/** The same value with every object's keys in another order. */
function shuffled(value: unknown, seed: number): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map((v) => shuffled(v, seed));
  const entries = Object.entries(value);
  const order = entries
    .map((_, i) => i)
    .sort((i, j) => ((i * 7919 + seed) % 13) - ((j * 7919 + seed) % 13) || j - i);
  const out: Record<string, unknown> = {};
  for (const i of order)
    Object.defineProperty(out, entries[i]![0], { value: shuffled(entries[i]![1], seed), enumerable: true });
  return out;
}

describe('canonicalJson', () => {
  test.each([
    [{ b: 1, a: [3, { d: true, c: null }] }, '{"a":[3,{"c":null,"d":true}],"b":1}'],
    [{ z: 'é', y: '😀', x: '\u0000' }, '{"x":"\\u0000","y":"😀","z":"é"}'],
    [[undefined, 1], '[null,1]'],
    [{ gone: undefined, kept: 0 }, '{"kept":0}'],
    ['text', '"text"'],
    [-0, '0'],
    [{}, '{}'],
    [[], '[]'],
  ])('%j -> %s', (value, text) => {
    expect(canonicalJson(value)).toBe(text);
  });

  test('a __proto__ key is data, carried as any other key', () => {
    const value = JSON.parse('{"__proto__":{"polluted":1},"constructor":2}') as unknown;
    expect(canonicalJson(value)).toBe('{"__proto__":{"polluted":1},"constructor":2}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test('keys sort by UTF-16 code units', () => {
    expect(canonicalJson({ b: 1, B: 2, '😀': 3, é: 4, '': 5 })).toBe('{"":5,"B":2,"b":1,"é":4,"😀":3}');
  });

  test('a value with no JSON form is refused', () => {
    expect(() => canonicalJson(() => 1)).toThrow('function has no JSON form');
    expect(() => canonicalJson(undefined)).toThrow('undefined has no JSON form');
  });

  test('any JSON value reads back equal, whatever its key order', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(), (value, seed) => {
        const text = canonicalJson(value);
        expect(canonicalJson(shuffled(value, seed))).toBe(text);
        expect(canonicalJson(JSON.parse(text))).toBe(text);
      }),
    );
  });
});

describe('planHash', () => {
  const plan: TrackingPlan = {
    rules: [{ type: 'track', name: 'Order Completed', schema: { type: 'object', required: ['properties'] } }],
  };

  test('is the sha256 of the canonical JSON, in hex', () => {
    const expected = createHash('sha256').update(canonicalJson(plan)).digest('hex');
    expect(planHash(plan)).toBe(expected);
    expect(planHash(plan)).toMatch(/^[0-9a-f]{64}$/);
  });

  test('does not depend on key order, and does on content', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.nat(), (schema, seed) => {
        const one = { rules: [{ type: 'track' as const, name: 'e', schema }] };
        const other = shuffled(one, seed) as TrackingPlan;
        expect(planHash(other)).toBe(planHash(one));
      }),
    );
    expect(planHash({ rules: [{ ...plan.rules[0]!, version: 2 }] })).not.toBe(planHash(plan));
  });
});
