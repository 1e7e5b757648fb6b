import fc from 'fast-check';
import { displayPath, errorAt, fieldErrorsOfProblem, fieldId, normalPath, within } from './field-paths';

// Keys as the API and the forms name them: any Unicode, and names that are also Object's own.
const oddKeys = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'a b', 'é', '😀', '0', '007'];
const segment = fc.oneof(
  fc.constantFrom(...oddKeys),
  fc.string({ unit: 'grapheme', minLength: 1 }).filter((s) => !/[./[\]]/.test(s)),
);

describe('normalPath', () => {
  it.each([
    ['body.displayName', 'displayName'],
    ['body.config.tasks[0].stream', 'config.tasks.0.stream'],
    ['body.config.tasks[12].stream[3]', 'config.tasks.12.stream.3'],
    ['credentials.secretKey', 'credentials.secretKey'],
    ['/credentials/api_key', 'credentials.api_key'],
    ['/body/config/x', 'config.x'],
    ['//a/b', 'a.b'],
    ['..a', 'a'],
    ['body', ''],
    ['body.', ''],
    ['bodyGuard.x', 'bodyGuard.x'],
    ['x.body.y', 'x.body.y'],
    ['a[b]', 'a[b]'],
    ['a[]', 'a[]'],
    ['', ''],
    ['a.b', 'a.b'],
  ])('%j → %j', (input, expected) => {
    expect(normalPath(input)).toBe(expected);
  });

  it('reads the three ways of writing a path as one', () => {
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 5 }), fc.nat(99), (keys, index) => {
        const path = [...keys, String(index)].join('.');
        expect(normalPath(`body.${keys.join('.')}[${index}]`)).toBe(path);
        expect(normalPath(`/${[...keys, index].join('/')}`)).toBe(path);
        expect(normalPath(path)).toBe(keys[0] === 'body' ? path.slice(5) : path);
      }),
    );
  });
});

describe('displayPath', () => {
  it.each([
    ['config.tasks.0.stream', 'config.tasks[0].stream'],
    ['a.12', 'a[12]'],
    ['a.0.1', 'a[0][1]'],
    ['a.1b', 'a.1b'],
    ['a.b1.c', 'a.b1.c'],
    ['0.a', '0.a'],
    ['a', 'a'],
    ['', ''],
  ])('%j → %j', (input, expected) => {
    expect(displayPath(input)).toBe(expected);
  });

  it('undoes normalPath of an indexed path', () => {
    fc.assert(
      fc.property(
        fc.array(
          segment.filter((s) => !/^\d+$/.test(s)),
          { minLength: 1, maxLength: 4 },
        ),
        fc.nat(),
        (keys, i) => {
          const shown = `${keys.join('.')}[${i}]`;
          expect(displayPath(normalPath(`body.${shown}`))).toBe(keys[0] === 'body' ? shown.slice(5) : shown);
        },
      ),
    );
  });
});

describe('fieldId', () => {
  it.each([
    ['credentials.api_key', 'f-credentials-api_key'],
    ['config.tasks.0.stream', 'f-config-tasks-0-stream'],
    ['a-B9_z', 'f-a-B9_z'],
    ['é', 'f--'],
    ['😀', 'f---'],
    ['a b', 'f-a-b'],
    ['', 'f-'],
  ])('%j → %j', (input, expected) => {
    expect(fieldId(input)).toBe(expected);
  });

  it('is an HTML id of the same length, whatever the path', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (path) => {
        const id = fieldId(path);
        expect(id).toMatch(/^f-[A-Za-z0-9_-]*$/);
        expect(id).toHaveLength(path.length + 2);
      }),
    );
  });
});

describe('fieldErrorsOfProblem', () => {
  it('maps each error path to its field, joining messages of one field', () => {
    expect(
      fieldErrorsOfProblem({
        status: 400,
        code: 'validation_failed',
        errors: [
          { path: 'body.config.tasks[0].stream', message: 'unknown stream' },
          { path: '/credentials/api_key', message: 'is required' },
          { path: 'credentials.api_key', message: 'is too short' },
          { path: 'body.displayName', code: 'too_long' },
          { path: 'body.other' },
          { message: 'no path' },
          { path: '', message: 'empty path' },
        ],
      }),
    ).toEqual({
      'config.tasks.0.stream': 'unknown stream',
      'credentials.api_key': 'is required; is too short',
      displayName: 'too_long',
      other: 'is not valid',
    });
  });

  it('names the field of a code the API gives no field, with its detail, title or code', () => {
    const byCode = { warehouse_login_failed: 'credentials.password' };
    const problem = {
      status: 422,
      code: 'warehouse_login_failed',
      errors: [{ path: 'body.x', message: 'm' }],
    };
    expect(fieldErrorsOfProblem({ ...problem, title: 'T', detail: 'D' }, byCode)).toEqual({
      'credentials.password': 'D',
    });
    expect(fieldErrorsOfProblem({ ...problem, title: 'T' }, byCode)).toEqual({ 'credentials.password': 'T' });
    expect(fieldErrorsOfProblem(problem, byCode)).toEqual({
      'credentials.password': 'warehouse_login_failed',
    });
    expect(fieldErrorsOfProblem({ ...problem, code: 'other' }, byCode)).toEqual({ x: 'm' });
    expect(fieldErrorsOfProblem({ status: 400, errors: [{ path: 'body.x', message: 'm' }] }, byCode)).toEqual(
      { x: 'm' },
    );
    expect(fieldErrorsOfProblem({ status: 500 })).toEqual({});
  });

  it('keeps every field, Object property names and Unicode included', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(segment, { minLength: 1, maxLength: 6 }),
        fc.string({ unit: 'grapheme', minLength: 1 }),
        (keys, message) => {
          const fields = fieldErrorsOfProblem({
            status: 400,
            errors: keys.flatMap((k) => [
              { path: `body.${k}`, message },
              { path: `/${k}`, message: 'again' },
            ]),
          });
          expect(Object.keys(fields).sort()).toEqual(keys.map((k) => (k === 'body' ? '' : k)).sort());
          for (const k of keys)
            expect(Object.getOwnPropertyDescriptor(fields, k === 'body' ? '' : k)?.value).toBe(
              `${message}; again`,
            );
        },
      ),
    );
  });
});

describe('within and errorAt', () => {
  const errors = {
    'config.tasks.0.stream': 'unknown stream',
    config: 'is not valid',
    configured: 'other field',
    'config.tasks.1': 'duplicate',
  };

  it('a path is within itself and its parents only', () => {
    expect(within('config.tasks', 'config')).toBe(true);
    expect(within('config', 'config')).toBe(true);
    expect(within('configured', 'config')).toBe(false);
    expect(within('config', 'config.tasks')).toBe(false);
    expect(within('a.config', 'config')).toBe(false);
  });

  it('a field shows its own message and those below it, named by their path', () => {
    expect(errorAt(errors, 'config')).toBe(
      'config.tasks[0].stream: unknown stream; is not valid; config.tasks[1]: duplicate',
    );
    expect(errorAt(errors, 'config.tasks')).toBe(
      'config.tasks[0].stream: unknown stream; config.tasks[1]: duplicate',
    );
    expect(errorAt(errors, 'config.tasks.0.stream')).toBe('unknown stream');
    expect(errorAt(errors, 'configured')).toBe('other field');
  });

  it('exact shows the field’s own message only', () => {
    expect(errorAt(errors, 'config', true)).toBe('is not valid');
    expect(errorAt(errors, 'config.tasks', true)).toBeUndefined();
    expect(errorAt(errors, 'nothing')).toBeUndefined();
    expect(errorAt({}, '')).toBeUndefined();
  });

  it('finds a field’s own message under any key', () => {
    fc.assert(
      fc.property(
        fc.dictionary(segment, fc.string({ unit: 'grapheme', minLength: 1 })),
        segment,
        (errs, key) => {
          const own = Object.getOwnPropertyDescriptor(errs, key)?.value as string | undefined;
          expect(errorAt(errs, key, true)).toBe(own);
          if (own !== undefined) expect(errorAt(errs, key)).toBe(own);
        },
      ),
    );
  });
});
