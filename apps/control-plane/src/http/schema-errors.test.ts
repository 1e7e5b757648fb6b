import Ajv from 'ajv';
import { schemaFieldErrors } from './schema-errors';

const ajv = new Ajv({ allErrors: true, strict: true });

function errorsOf(schema: object, value: unknown) {
  const validate = ajv.compile(schema);
  expect(validate(value)).toBe(false);
  return schemaFieldErrors(validate.errors ?? [], 'body.x', 'is unknown here');
}

describe('schemaFieldErrors', () => {
  const object = {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: { type: 'string' },
      tags: { type: 'array', items: { type: 'string' } },
      'a/b~c': { type: 'number' },
    },
  };

  it('names each field under the prefix: missing, unknown, wrong type, array items, escaped keys', () => {
    expect(errorsOf(object, { extra: 1, tags: ['ok', 7], 'a/b~c': 'x' })).toEqual([
      { path: 'body.x.name', message: 'is required' },
      { path: 'body.x.extra', message: 'is unknown here' },
      { path: 'body.x.tags[1]', message: 'must be string' },
      { path: 'body.x.a/b~c', message: 'must be number' },
    ]);
  });

  it('writes only whole-number segments as indices', () => {
    const schema = {
      type: 'object',
      properties: {
        v2: { type: 'string' },
        '2x': { type: 'string' },
        list: { type: 'array', items: { type: 'string' } },
      },
    };
    const list = Array.from({ length: 12 }, (_, i) => (i === 11 ? 0 : 'ok'));
    expect(errorsOf(schema, { v2: 1, '2x': 1, list })).toEqual([
      { path: 'body.x.v2', message: 'must be string' },
      { path: 'body.x.2x', message: 'must be string' },
      { path: 'body.x.list[11]', message: 'must be string' },
    ]);
  });

  it('never carries the value, only where and what', () => {
    const secret = 'sk_live_do_not_echo';
    const errors = errorsOf(
      { type: 'object', properties: { key: { type: 'string', maxLength: 4 } } },
      { key: secret },
    );
    expect(errors).toEqual([{ path: 'body.x.key', message: 'must NOT have more than 4 characters' }]);
    expect(JSON.stringify(errors)).not.toContain(secret);
  });

  it('reports only the closest alternative of a union, at any depth', () => {
    const union = {
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['token'],
          properties: { token: { type: 'string' } },
        },
        {
          type: 'object',
          additionalProperties: false,
          required: ['user', 'secret'],
          properties: { user: { type: 'string' }, secret: { type: 'string' } },
        },
      ],
    };
    // The second alternative misses one field; the first misses one and refuses one.
    expect(errorsOf(union, { user: 'u' })).toEqual([{ path: 'body.x.secret', message: 'is required' }]);
    expect(errorsOf(union, {})).toEqual([{ path: 'body.x.token', message: 'is required' }]);
    const nested = { type: 'object', properties: { inner: union } };
    expect(errorsOf(nested, { inner: { user: 'u' } })).toEqual([
      { path: 'body.x.inner.secret', message: 'is required' },
    ]);
    expect(errorsOf({ oneOf: union.anyOf }, { user: 'u' })).toEqual([
      { path: 'body.x.secret', message: 'is required' },
    ]);
  });

  it('passes other errors through beside a union', () => {
    const schema = {
      type: 'object',
      properties: {
        a: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        b: { type: 'boolean' },
      },
    };
    expect(errorsOf(schema, { a: null, b: 1 })).toEqual([
      { path: 'body.x.a', message: 'must be string' },
      { path: 'body.x.b', message: 'must be boolean' },
    ]);
  });
});
