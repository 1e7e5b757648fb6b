import {
  choicesOf,
  collect,
  defaultsOf,
  initialValue,
  isEntered,
  kindOf,
  labelOf,
  recordValueSchema,
  unsupported,
  type JsonSchema,
} from './schema-values';

const str: JsonSchema = { type: 'string' };
const check = (schema: JsonSchema, state: unknown) => collect(schema, state, 'c');

describe('kindOf and choicesOf', () => {
  it.each<[JsonSchema, string | null]>([
    [{ type: 'string' }, 'string'],
    [{ type: ['string', 'null'] }, 'string'],
    [{ type: ['null', 'integer'] }, 'number'],
    [{ type: 'number' }, 'number'],
    [{ type: 'boolean' }, 'boolean'],
    [{ enum: ['a'] }, 'choice'],
    [{ const: 1 }, 'choice'],
    [{ anyOf: [{ const: 'a' }, { const: 'b' }] }, 'choice'],
    [{ oneOf: [{ type: 'object', properties: { a: str } }, { properties: { b: str } }] }, 'union'],
    [{ anyOf: [{ type: 'object' }, { type: 'string' }] }, null],
    [{ anyOf: [] }, 'union'],
    [{ type: 'object', properties: { a: str } }, 'object'],
    [{ properties: { a: str } }, 'object'],
    [{ type: 'object' }, 'object'],
    [{ type: 'object', properties: {}, additionalProperties: str }, 'record'],
    [{ type: 'object', patternProperties: { '^a': str } }, 'record'],
    [{ type: 'object', patternProperties: { '^a': str, '^b': str } }, 'object'],
    [{ type: 'object', additionalProperties: true }, 'object'],
    [{ type: 'array', items: str }, 'array'],
    [{ type: 'array', items: { enum: [1] } }, 'array'],
    [{ type: 'array', items: { type: 'boolean' } }, 'array'],
    [{ type: 'array', items: { type: 'integer' } }, 'array'],
    [{ type: 'array', items: { type: 'object', properties: { a: str } } }, null],
    [{ type: 'array' }, null],
    [{ type: 'null' }, null],
    [{}, null],
  ])('%j is a %s', (schema, kind) => {
    expect(kindOf(schema)).toBe(kind);
  });

  it('lists the values of enums, consts and unions of consts', () => {
    expect(choicesOf({ enum: ['a', 2] })).toEqual(['a', 2]);
    expect(choicesOf({ const: null })).toEqual([null]);
    expect(choicesOf({ oneOf: [{ const: 'x' }, { const: 'y' }] })).toEqual(['x', 'y']);
    expect(choicesOf({ anyOf: [{ const: 'x' }, { type: 'string' }] })).toBeNull();
    expect(choicesOf({ anyOf: [] })).toBeNull();
    expect(choicesOf({ type: 'string' })).toBeNull();
  });

  it('a record takes its value schema from one pattern or additionalProperties', () => {
    expect(recordValueSchema({ patternProperties: { '^a': str } })).toBe(str);
    expect(recordValueSchema({ patternProperties: {}, additionalProperties: str })).toBe(str);
    expect(recordValueSchema({ additionalProperties: false })).toBeNull();
    expect(recordValueSchema({})).toBeNull();
  });
});

describe('unsupported', () => {
  it('knows every keyword of the subset', () => {
    const keywords = [
      'title',
      'description',
      'required',
      'additionalProperties',
      'patternProperties',
      'items',
      'enum',
      'const',
      'default',
      'writeOnly',
      'readOnly',
      'minLength',
      'maxLength',
      'pattern',
      'format',
      'minimum',
      'maximum',
      'minItems',
      'maxItems',
      'examples',
      '$schema',
      '$id',
    ];
    for (const k of keywords) expect(unsupported({ type: 'string', [k]: null })).toEqual([]);
    expect(unsupported({ type: 'object', properties: {} })).toEqual([]);
    expect(unsupported({ anyOf: [{ properties: {} }] })).toEqual([]);
    expect(unsupported({ oneOf: [{ properties: {} }] })).toEqual([]);
  });

  it('names nothing for the supported subset', () => {
    expect(
      unsupported({
        type: 'object',
        $schema: 'x',
        properties: {
          a: { type: 'string', minLength: 1, pattern: '^a', examples: ['a'] },
          b: { anyOf: [{ properties: { x: str } }, { type: 'object', properties: { y: { enum: [1] } } }] },
          c: { type: 'object', additionalProperties: { type: 'integer' } },
          d: { type: 'array', items: str, minItems: 1 },
        },
      }),
    ).toEqual([]);
  });

  it('names unknown keywords and schemas without an input, by path', () => {
    expect(
      unsupported({
        type: 'object',
        if: {},
        properties: {
          a: { type: 'string', $ref: '#/x' },
          b: { type: 'array', items: { type: 'object', properties: { z: str } } },
          c: { type: 'object', additionalProperties: { type: 'object', properties: { z: str } } },
          d: { type: 'object', patternProperties: { '.': { type: 'string', not: {} } } },
          e: { anyOf: [{ properties: { x: { type: 'null' } } }] },
          f: { type: 'array', items: { type: 'string', uniqueItems: true } },
        },
      }),
    ).toEqual([
      '(root): keyword if',
      '.a: keyword $ref',
      '.b: no input for {"type":"array","items":{"type":"object","properties":{"z":{"type":"string"}}}}',
      '.c: a record of object',
      '.d.*: keyword not',
      '.e|0.x: no input for {"type":"null"}',
      '.f[]: keyword uniqueItems',
    ]);
    expect(unsupported({ type: 'object', additionalProperties: { type: 'array' } })).toEqual([
      '(root): a record of unknown',
      '.*: no input for {"type":"array"}',
    ]);
    expect(unsupported({ type: 'tuple', description: 'x'.repeat(100) })).toEqual([
      `(root): no input for ${JSON.stringify({ type: 'tuple', description: 'x'.repeat(100) }).slice(0, 80)}`,
    ]);
  });
});

describe('initialValue, defaultsOf and isEntered', () => {
  const schema: JsonSchema = {
    type: 'object',
    properties: {
      host: str,
      port: { type: 'integer', default: 5432 },
      password: { type: 'string', writeOnly: true, default: 'no' },
      tls: { type: 'boolean', default: true },
      off: { type: 'boolean' },
      mode: { enum: ['a', 'b'] },
      tags: { type: 'object', additionalProperties: str },
      list: { type: 'array', items: { type: 'integer' } },
      auth: {
        oneOf: [
          { type: 'object', properties: { token: str } },
          { type: 'object', properties: { user: str, pass: str } },
        ],
      },
    },
  };

  it('fills the form from a stored value, never its secrets', () => {
    expect(
      initialValue(schema, {
        host: 'h',
        port: 5433,
        password: 'secret',
        tls: false,
        mode: 'b',
        tags: { x: 'y', '': 'z' },
        list: [1, 2],
        auth: { user: 'u' },
      }),
    ).toEqual({
      host: 'h',
      port: '5433',
      password: '',
      tls: false,
      off: false,
      mode: 'b',
      tags: [
        { key: 'x', value: 'y' },
        { key: '', value: 'z' },
      ],
      list: ['1', '2'],
      auth: { branch: 1, value: { user: 'u', pass: '' } },
    });
  });

  it('starts a new form empty, booleans at their default and unions at the first branch', () => {
    const empty = {
      host: '',
      port: '',
      password: '',
      tls: true,
      off: false,
      mode: '',
      tags: [],
      list: [],
      auth: { branch: 0, value: { token: '' } },
    };
    expect(initialValue(schema, undefined)).toEqual(empty);
    expect(initialValue(schema, null)).toEqual(empty);
    expect(initialValue(schema, 'x')).toEqual(empty);
    expect(initialValue(schema, { auth: 'x', tags: 'x', list: 'x', host: null, tls: 'yes' })).toEqual(empty);
    expect(initialValue(schema, { auth: { other: 1 } })).toEqual(empty);
    expect(initialValue(schema, { auth: { token: 't', user: 'u' } })).toEqual({
      ...empty,
      auth: { branch: 0, value: { token: 't' } },
    });
    expect(initialValue({ oneOf: [] }, {})).toEqual({ branch: 0, value: '{}' });
    expect(initialValue({ anyOf: [{ properties: { a: str } }] }, { a: 'x' })).toEqual({
      branch: 0,
      value: { a: 'x' },
    });
  });

  it('takes the defaults that are not secrets', () => {
    expect(defaultsOf(schema)).toEqual({ port: 5432, tls: true });
    expect(defaultsOf({ type: 'string' })).toEqual({});
    expect(defaultsOf({ properties: { a: { type: 'boolean', default: false } } })).toEqual({ a: false });
  });

  it('knows whether anything was entered', () => {
    expect(isEntered('  ')).toBe(false);
    expect(isEntered(' x ')).toBe(true);
    expect(isEntered(true)).toBe(true);
    expect(isEntered(false)).toBe(false);
    expect(isEntered([])).toBe(false);
    expect(isEntered([''])).toBe(true);
    expect(isEntered({ a: '', b: false })).toBe(false);
    expect(isEntered({ a: '', b: 'x' })).toBe(true);
    expect(isEntered({ branch: 1, value: { a: '' } })).toBe(false);
    expect(isEntered({ branch: 1, value: 'x' })).toBe(true);
    expect(isEntered({ branch: 1 })).toBe(false);
    expect(isEntered({ value: 'x' })).toBe(true);
    expect(isEntered(null)).toBe(false);
    expect(isEntered(undefined)).toBe(false);
    expect(isEntered(3)).toBe(false);
  });
});

describe('collect: the checks', () => {
  it.each<[string, JsonSchema, unknown, unknown, string | undefined]>([
    ['a required string', str, '  ', undefined, 'Required.'],
    ['a string trimmed', str, ' a b ', 'a b', undefined],
    ['minLength', { type: 'string', minLength: 3 }, 'ab', 'ab', 'At least 3 characters.'],
    ['minLength met', { type: 'string', minLength: 3 }, 'abc', 'abc', undefined],
    ['maxLength', { type: 'string', maxLength: 2 }, 'abc', 'abc', 'At most 2 characters.'],
    ['maxLength met', { type: 'string', maxLength: 3 }, 'abc', 'abc', undefined],
    ['maxLength in code points', { type: 'string', maxLength: 2 }, '😀😀', '😀😀', undefined],
    ['minLength in code points', { type: 'string', minLength: 2 }, '😀', '😀', 'At least 2 characters.'],
    [
      'minLength before maxLength',
      { type: 'string', minLength: 5, maxLength: 1 },
      'abc',
      'abc',
      'At least 5 characters.',
    ],
    [
      'maxLength before pattern',
      { type: 'string', maxLength: 1, pattern: '^z' },
      'abc',
      'abc',
      'At most 1 characters.',
    ],
    ['pattern', { type: 'string', pattern: '^[a-z]+$' }, 'aB', 'aB', 'Not in the expected form.'],
    ['pattern met', { type: 'string', pattern: '^[a-z]+$' }, 'ab', 'ab', undefined],
    ['a Unicode pattern', { type: 'string', pattern: '^\\p{L}$' }, 'é', 'é', undefined],
    ['a pattern the browser cannot read', { type: 'string', pattern: '(' }, 'x', 'x', undefined],
    ['a number', { type: 'number' }, '1.5', 1.5, undefined],
    ['not a number', { type: 'number' }, '1.5x', undefined, 'Enter a number.'],
    ['Infinity', { type: 'number' }, 'Infinity', undefined, 'Enter a number.'],
    ['an integer', { type: 'integer' }, '-7', -7, undefined],
    ['not an integer', { type: 'integer' }, '1.5', undefined, 'Enter a whole number.'],
    ['not a whole number', { type: 'integer' }, 'x', undefined, 'Enter a whole number.'],
    ['a nullable integer', { type: ['integer', 'null'] }, '1.5', undefined, 'Enter a whole number.'],
    ['minimum', { type: 'integer', minimum: 1 }, '0', 0, 'At least 1.'],
    ['minimum met', { type: 'integer', minimum: 1 }, '1', 1, undefined],
    ['maximum', { type: 'integer', maximum: 65535 }, '65536', 65536, 'At most 65535.'],
    ['maximum met', { type: 'integer', maximum: 65535 }, '65535', 65535, undefined],
    ['minimum 0', { type: 'integer', minimum: 0 }, '-1', -1, 'At least 0.'],
    ['maximum 0', { type: 'integer', maximum: 0 }, '1', 1, 'At most 0.'],
    ['an enum', { enum: ['a', 'b'] }, 'b', 'b', undefined],
    ['an enum of numbers', { enum: [1, 2] }, '2', 2, undefined],
    ['not in the enum', { enum: ['a', 'b'] }, 'c', undefined, 'Choose one of the values.'],
    ['a const', { const: 'only' }, 'only', 'only', undefined],
    ['a union of consts', { anyOf: [{ const: 'x' }, { const: 'y' }] }, 'y', 'y', undefined],
    ['an empty choice', { enum: ['a'] }, '', undefined, 'Required.'],
    ['a boolean true', { type: 'boolean' }, true, true, undefined],
    ['a required boolean unset', { type: 'boolean' }, undefined, false, undefined],
    ['a state that is not text', str, 5, undefined, 'Required.'],
  ])('%s', (_title, schema, state, value, error) => {
    const result = check(schema, state);
    expect(result.value).toEqual(value);
    expect(result.errors).toEqual(error ? { c: error } : {});
  });

  it('leaves out empty optional fields and keeps required ones', () => {
    const schema: JsonSchema = {
      type: 'object',
      required: ['name', 'on', 'rows', 'list'],
      properties: {
        name: str,
        note: str,
        on: { type: 'boolean' },
        off: { type: 'boolean' },
        set: { type: 'boolean' },
        rows: { type: 'object', additionalProperties: str },
        opt: { type: 'object', additionalProperties: str },
        list: { type: 'array', items: str },
        optList: { type: 'array', items: str },
      },
    };
    expect(collect(schema, { set: false }, 'config')).toEqual({
      value: { on: false, set: false, rows: {}, list: [] },
      errors: { 'config.name': 'Required.', 'config.rows': 'Add at least one.' },
    });
    expect(collect(schema, undefined, 'config').value).toEqual({ on: false, rows: {}, list: [] });
  });

  it('collects records by name and finds empty and repeated names', () => {
    const schema: JsonSchema = { type: 'object', additionalProperties: { type: 'integer' } };
    expect(
      check(schema, [
        { key: ' a ', value: '1' },
        { key: '', value: '' },
        { key: ' ', value: '2' },
        { key: 'a', value: '3' },
        { key: 'b', value: '' },
        { key: '__proto__', value: '4' },
        { key: 'constructor', value: '5' },
      ]),
    ).toEqual({
      value: Object.fromEntries([
        ['a', 3],
        ['__proto__', 4],
        ['constructor', 5],
      ]),
      errors: { 'c.2.key': 'Enter a name.', 'c.3.key': '"a" is there twice.', 'c.4.value': 'Required.' },
    });
    expect(check(schema, [])).toEqual({ value: {}, errors: { c: 'Add at least one.' } });
    expect(check(schema, undefined)).toEqual({ value: {}, errors: { c: 'Add at least one.' } });
    expect(collect(schema, [], 'c', { c: 'kept' })).toEqual({ value: {}, errors: { c: 'kept' } });
    expect(collect({ properties: { r: schema } }, { r: [{ key: '', value: '' }] }, 'c')).toEqual({
      value: {},
      errors: {},
    });
  });

  it('collects arrays and counts their items', () => {
    const schema: JsonSchema = { type: 'array', items: { type: 'integer' }, minItems: 2 };
    expect(check(schema, ['1', 'x'])).toEqual({
      value: [1],
      errors: { 'c.1': 'Enter a whole number.', c: 'Add at least 2.' },
    });
    expect(check(schema, ['1', '2'])).toEqual({ value: [1, 2], errors: {} });
    expect(check({ type: 'array', items: str, minItems: 0 }, [])).toEqual({ value: [], errors: {} });
    expect(check({ type: 'array', items: str }, undefined)).toEqual({ value: [], errors: {} });
    expect(collect({ properties: { l: { type: 'array', items: str } } }, { l: [] }, 'c')).toEqual({
      value: {},
      errors: {},
    });
  });

  it('collects the chosen branch of a union', () => {
    const schema: JsonSchema = {
      anyOf: [
        { type: 'object', required: ['token'], properties: { token: str } },
        { type: 'object', required: ['user'], properties: { user: str, pass: str } },
      ],
    };
    expect(check(schema, { branch: 1, value: { user: 'u', pass: '' } })).toEqual({
      value: { user: 'u' },
      errors: {},
    });
    expect(check(schema, undefined)).toEqual({ value: {}, errors: { 'c.token': 'Required.' } });
    expect(check(schema, { branch: 5, value: 'x' })).toEqual({ value: 'x', errors: {} });
    expect(check({ oneOf: schema.anyOf }, { branch: 0, value: { token: 't' } }).value).toEqual({
      token: 't',
    });
  });

  it('keeps fields named like Object properties', () => {
    const schema: JsonSchema = {
      type: 'object',
      properties: { __proto__: str, constructor: str, toString: { type: 'integer' } } as Record<
        string,
        JsonSchema
      >,
    };
    Object.defineProperty(schema.properties, '__proto__', { value: str, enumerable: true });
    const state = initialValue(schema, JSON.parse('{"__proto__":"p","constructor":"c","toString":7}'));
    expect(Object.entries(state as object)).toEqual([
      ['constructor', 'c'],
      ['toString', '7'],
      ['__proto__', 'p'],
    ]);
    expect(JSON.stringify(collect(schema, state, 'c').value)).toBe(
      '{"constructor":"c","toString":7,"__proto__":"p"}',
    );
    expect(initialValue(schema, {})).toEqual(
      Object.fromEntries([
        ['constructor', ''],
        ['toString', ''],
        ['__proto__', ''],
      ]),
    );
  });
});

describe('labelOf', () => {
  it.each([
    ['apiKey', 'API key'],
    ['baseUrl', 'Base URL'],
    ['tls_mode', 'TLS mode'],
    ['client-id', 'Client ID'],
    ['ipAllowList', 'IP allow list'],
    ['sdkRestToken', 'SDK REST token'],
    ['port2Number', 'Port2 number'],
    ['identity', 'Identity'],
    ['  spaced__out  ', 'Spaced out'],
    ['', ''],
    ['é', 'É'],
  ])('%j → %j', (name, label) => {
    expect(labelOf(name, {})).toBe(label);
  });

  it('prefers the title', () => {
    expect(labelOf('apiKey', { title: 'Secret' })).toBe('Secret');
  });
});

describe('the corners mutation testing found', () => {
  it('a union of objects without properties, and an object whose properties win over a record', () => {
    expect(kindOf({ anyOf: [{ type: 'object' }, { type: ['object', 'null'] }] })).toBe('union');
    expect(kindOf({ type: 'object', properties: { a: str }, additionalProperties: str })).toBe('object');
    expect(unsupported({ type: 'string', items: { type: 'null' } })).toEqual([]);
    // What a schema's kind does not read is not checked either.
    expect(unsupported({ anyOf: [{ properties: { x: str } }], properties: { z: { type: 'null' } } })).toEqual(
      [],
    );
    expect(unsupported({ anyOf: [{ const: 'a', foo: 1 }] })).toEqual([]);
    expect(
      unsupported({ type: 'object', properties: { a: str }, additionalProperties: { type: 'null' } }),
    ).toEqual([]);
  });

  it('a stored value picks the branch that has all its keys', () => {
    const schema: JsonSchema = {
      oneOf: [
        { type: 'object', properties: { token: str } },
        { type: 'object', properties: { user: str, pass: str } },
      ],
    };
    expect(initialValue(schema, { user: 'u', other: 'x' })).toEqual({ branch: 0, value: { token: '' } });
    expect(initialValue(schema, { pass: 'p' })).toEqual({ branch: 1, value: { user: '', pass: 'p' } });
  });

  it('records and arrays fill their rows by their value schema', () => {
    expect(initialValue({ type: 'object', additionalProperties: { type: 'boolean' } }, { x: true })).toEqual([
      { key: 'x', value: true },
    ]);
    expect(initialValue({ type: 'array', items: { type: 'boolean' } }, [true, 'no'])).toEqual([true, false]);
  });

  it('defaults hold only the fields that have one', () => {
    expect(Object.keys(defaultsOf({ properties: { a: str, b: { type: 'integer', default: 1 } } }))).toEqual([
      'b',
    ]);
  });

  it('only a union value is read by its branch', () => {
    expect(isEntered({ branch: true })).toBe(true);
    expect(isEntered({ '': 'x', value: '' })).toBe(true);
    expect(isEntered({ branch: 'x', '': 'y' })).toBe(true);
  });

  it('collects no key for an empty field', () => {
    const schema: JsonSchema = {
      type: 'object',
      properties: { a: str, b: str, r: { type: 'object', additionalProperties: str } },
    };
    const { value, errors } = collect(schema, { a: 'x', b: '', r: [{ key: 'k', value: '' }] }, 'c');
    expect(Object.keys(value as object)).toEqual(['a']);
    expect(errors).toEqual({ 'c.r.0.value': 'Required.' });
    const rows = collect(schema, { r: [{ key: 'k', value: 'v' }] }, 'c');
    expect(rows).toEqual({ value: { r: { k: 'v' } }, errors: {} });
    const record = collect(schema.properties!.r!, [{ key: 'k', value: '' }], 'c');
    expect(Object.keys(record.value as object)).toEqual([]);
  });

  it('optional arrays are sent when they hold items, and every item is required', () => {
    const schema: JsonSchema = { type: 'object', properties: { l: { type: 'array', items: str } } };
    expect(collect(schema, { l: ['a', ' '] }, 'c')).toEqual({
      value: { l: ['a'] },
      errors: { 'c.l.1': 'Required.' },
    });
  });
});
