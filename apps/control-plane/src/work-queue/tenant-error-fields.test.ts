import { AppError } from '@pipeline/errors';
import { classifyFailure, shownError, TenantFacingError, withheldFields } from './tenant-error';

// Which fields a classified failure carries (a field that is absent must not appear with an
// undefined value, which a log line would print), the stored codes shown as internal, and the
// internal texts that withhold a message.

describe('TenantFacingError', () => {
  it('is named for the logs', () => {
    expect(new TenantFacingError('c', 'm').name).toBe('TenantFacingError');
  });
});

describe('classifyFailure fields', () => {
  it('a tenant-facing error without detail carries no detail key', () => {
    expect(Object.keys(classifyFailure(new TenantFacingError('c', 'm'), 'ref'))).toEqual([
      'error',
      'internal',
    ]);
    expect(Object.keys(classifyFailure(new AppError(409, 'c', 'm'), 'ref'))).toEqual(['error', 'internal']);
  });

  it('an internal failure without a stack carries no stack key', () => {
    expect(Object.keys(classifyFailure('thrown text', 'ref'))).toEqual(['error', 'internal', 'detail']);
    expect(Object.keys(classifyFailure(new Error('x'), 'ref'))).toEqual([
      'error',
      'internal',
      'detail',
      'stack',
    ]);
  });
});

describe('withheldFields', () => {
  const error = { code: 'c', message: 'm' };
  it('names the reference and the stack only of an internal failure, each only when present', () => {
    expect(withheldFields({ error, internal: false, detail: 'd', stack: 's' }, 'ref')).toStrictEqual({
      detail: 'd',
    });
    expect(withheldFields({ error, internal: false }, 'ref')).toStrictEqual({});
    expect(withheldFields({ error, internal: true, detail: 'd', stack: 's' }, 'ref')).toStrictEqual({
      reference: 'ref',
      detail: 'd',
      stack: 's',
    });
    expect(withheldFields({ error, internal: true }, 'ref')).toStrictEqual({ reference: 'ref' });
  });
});

describe('shownError', () => {
  const internal = { code: 'internal_error', message: 'An internal error occurred' };
  it('shows codes stored before classification as internal, other codes as stored', () => {
    expect(shownError({ code: 'internal', message: 'fine text', at: 't' })).toEqual({ ...internal, at: 't' });
    expect(shownError({ code: 'step_failed', message: 'fine text' })).toEqual(internal);
    expect(shownError({ code: 'stripe_unauthorized', message: 'fine text' })).toEqual({
      code: 'stripe_unauthorized',
      message: 'fine text',
    });
    expect(shownError({ message: 'fine text' })).toEqual({ message: 'fine text' });
    expect(shownError({ code: '', message: 'fine text' })).toEqual({ code: '', message: 'fine text' });
  });

  it.each([
    'role "pipeline_owner" does not exist',
    'role "" does not exist',
    'database "warehouse_prod" does not exist',
    'database "" does not exist',
    'failed\n    at Object.run (/srv/app.js:1:1)',
    'failed\n at x',
  ])('withholds %j', (message) => {
    expect(shownError({ code: 'c', message })).toEqual(internal);
  });

  it.each(['the role "a does not exist', 'failed\nat x', 'failed\n    at  ', 'database is fine'])(
    'shows %j',
    (message) => {
      expect(shownError({ code: 'c', message })).toEqual({ code: 'c', message });
    },
  );
});
