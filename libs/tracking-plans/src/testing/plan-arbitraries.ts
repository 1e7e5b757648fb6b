import fc from 'fast-check';
import type { JsonSchema } from '../plan-document';

/** A property's schema, a value it accepts, and a value of another JSON type. */
export interface ShapedValue {
  schema: JsonSchema;
  value: unknown;
  wrongType: unknown;
}

/** An object built key by key, so that `__proto__` is an own key and not the prototype. */
export function objectOf(entries: readonly (readonly [string, unknown])[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of entries)
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

/**
 * Keys that trip naive code: prototype names, JSON Pointer's own characters, any Unicode. A plan
 * cannot name `__proto__` (checkPlan refuses it), so only unplanned keys include it.
 */
export const propertyKey = fc.oneof(
  fc.constantFrom('constructor', 'toString', 'a/b', '~', '~1', '~0/', '', ' ', 'hasOwnProperty'),
  // fast-check's strings lean towards `__proto__` on purpose: a planned key cannot be it.
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }).filter((key) => key !== '__proto__'),
);

export const unplannedKey = fc.oneof(fc.constant('__proto__'), propertyKey);

const leaf: fc.Arbitrary<ShapedValue> = fc.oneof(
  fc.string({ unit: 'grapheme' }).map((value) => ({ schema: { type: 'string' }, value, wrongType: 1 })),
  fc.integer({ min: -1e6, max: 1e6 }).map((value) => ({
    schema: { type: 'integer', minimum: value - 1, maximum: value + 1 },
    value,
    wrongType: String(value),
  })),
  fc
    .double({ noNaN: true, noDefaultInfinity: true })
    .map((value) => ({ schema: { type: 'number' }, value, wrongType: 'n' })),
  fc.boolean().map((value) => ({ schema: { type: 'boolean' }, value, wrongType: 'true' })),
  fc
    .uniqueArray(fc.string({ unit: 'grapheme' }), { minLength: 1, maxLength: 4 })
    .chain((values) =>
      fc
        .constantFrom(...values)
        .map((value) => ({ schema: { type: 'string', enum: values }, value, wrongType: 3 })),
    ),
  fc
    .stringMatching(/^[A-Z]{3}$/)
    .map((value) => ({ schema: { type: 'string', pattern: '^[A-Z]{3}$' }, value, wrongType: [] })),
  fc
    .array(fc.integer(), { maxLength: 3 })
    .map((value) => ({ schema: { type: 'array', items: { type: 'integer' } }, value, wrongType: {} })),
);

export interface ShapedProperty extends ShapedValue {
  key: string;
  required: boolean;
}

/** A closed object schema of up to six properties (some nested), and an object it accepts. */
export const shapedObject: fc.Arbitrary<{
  schema: JsonSchema;
  value: Record<string, unknown>;
  properties: ShapedProperty[];
}> = fc
  .uniqueArray(
    fc.record({
      key: propertyKey,
      shape: fc.oneof(
        { weight: 4, arbitrary: leaf },
        {
          weight: 1,
          arbitrary: fc
            .uniqueArray(fc.tuple(propertyKey, leaf), { maxLength: 3, selector: ([k]) => k })
            .map((inner) => ({
              schema: {
                type: 'object',
                properties: objectOf(inner.map(([k, s]) => [k, s.schema])),
                additionalProperties: false,
              },
              value: objectOf(inner.map(([k, s]) => [k, s.value])),
              wrongType: 'object',
            })),
        },
      ),
      required: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6, selector: (p) => p.key },
  )
  .map((props) => {
    const properties = props.map(({ key, shape, required }) => ({ key, required, ...shape }));
    return {
      properties,
      schema: {
        type: 'object',
        properties: objectOf(properties.map((p) => [p.key, p.schema])),
        required: properties.filter((p) => p.required).map((p) => p.key),
        additionalProperties: false,
      },
      value: objectOf(properties.map((p) => [p.key, p.value])),
    };
  });
