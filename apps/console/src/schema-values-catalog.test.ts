// The catalog's schemas through the form: a fast-check property per schema, so a test of its
// own, left out of the mutation run (which repeats the tests covering a mutant hundreds of times).
import { appCatalog } from '@pipeline/catalog';
import Ajv from 'ajv';
import fc from 'fast-check';
import {
  choicesOf,
  collect,
  initialValue,
  kindOf,
  recordValueSchema,
  unsupported,
  type JsonSchema,
} from './schema-values';

// Every credentials and config schema of the catalog, as GET /api/v1/app-types sends it.
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as JsonSchema;
const catalogSchemas = appCatalog.flatMap((d) => [
  [`${d.appType} credentials`, plain(d.credentials)] as const,
  [`${d.appType} config`, plain(d.config)] as const,
]);

const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.constantFrom(
    '',
    ' ',
    '__proto__',
    'constructor',
    'a.b',
    '0',
    '-1',
    '1.5',
    '65535',
    '65536',
    'x@y.z',
    'https://a.b',
  ),
);

/** Form states for a schema: any text in its inputs, its choices, numbers at its bounds. */
function stateOf(schema: JsonSchema): fc.Arbitrary<unknown> {
  const kind = kindOf(schema);
  if (kind === 'object')
    return fc.record(
      Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([name, field]) => [name, stateOf(field)]),
      ),
    );
  if (kind === 'union') {
    const branches = schema.anyOf ?? schema.oneOf ?? [];
    return fc.oneof(...branches.map((b, branch) => stateOf(b).map((value) => ({ branch, value }))));
  }
  if (kind === 'record')
    return fc.array(fc.record({ key: text, value: stateOf(recordValueSchema(schema) ?? {}) }), {
      maxLength: 3,
    });
  if (kind === 'array') return fc.array(stateOf(schema.items ?? {}), { maxLength: 3 });
  if (kind === 'boolean') return fc.option(fc.boolean(), { nil: undefined });
  if (kind === 'choice') return fc.oneof(fc.constantFrom(...(choicesOf(schema) ?? []).map(String)), text);
  if (kind === 'number') {
    const bounds = [schema.minimum, schema.maximum].filter((n): n is number => n !== undefined);
    return fc.oneof(
      fc.constantFrom(...bounds.flatMap((n) => [n - 1, n, n + 1, n + 0.5]).map(String), '0'),
      fc.integer().map(String),
      text,
    );
  }
  const samples = [schema.default, ...((schema.examples as unknown[]) ?? [])].filter(
    (s) => typeof s === 'string',
  );
  return samples.length > 0 ? fc.oneof(fc.constantFrom(...samples), text) : text;
}

describe('the catalog’s schemas', () => {
  const ajv = new Ajv({ strict: false, validateFormats: false, allErrors: true });

  it.each(catalogSchemas)('%s: the form renders all of it', (_name, schema) => {
    expect(unsupported(schema)).toEqual([]);
  });

  it.each(catalogSchemas)('%s: what passes the form’s checks the schema accepts', (_name, schema) => {
    const validate = ajv.compile(schema);
    fc.assert(
      fc.property(stateOf(schema), (state) => {
        const { value, errors } = collect(schema, state, 'c');
        if (Object.keys(errors).length === 0)
          expect({ valid: validate(value), errors: validate.errors }).toEqual({ valid: true, errors: null });
      }),
      { numRuns: 60 },
    );
  });

  it.each(catalogSchemas)('%s: a stored value fills the form and comes back the same', (_name, schema) => {
    const validate = ajv.compile(schema);
    fc.assert(
      fc.property(stateOf(schema), (state) => {
        const { value, errors } = collect(schema, state, 'c');
        if (
          Object.keys(errors).length > 0 ||
          !validate(value) ||
          JSON.stringify(value).includes('"writeOnly"')
        )
          return;
        const again = collect(schema, initialValue(schema, value), 'c');
        const secrets = JSON.stringify(schema).includes('"writeOnly":true');
        if (!secrets) expect(again).toEqual({ value, errors: {} });
      }),
      { numRuns: 30 },
    );
  });
});

describe('string lengths', () => {
  const ajv = new Ajv({ strict: false });

  it('the form counts a length as the API does, in code points', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }).filter((s) => s.trim() === s && s !== ''),
        fc.nat(8),
        fc.nat(8),
        (text, min, max) => {
          const schema: JsonSchema = { type: 'string', minLength: min, maxLength: max };
          const passes = Object.keys(collect(schema, text, 'c').errors).length === 0;
          expect(passes).toBe(ajv.validate(schema, text));
        },
      ),
    );
  });
});
