import { AppError } from '@pipeline/errors';
import { JobFailure, TransientJobError } from '../jobs/job-executor';
import {
  classifyFailure,
  newErrorReference,
  shownError,
  TenantFacingError,
  withheldFields,
} from './tenant-error';

const internal = (reference: string) => ({
  code: 'internal_error',
  message: `An internal error occurred; reference ${reference}`,
});

describe('classifyFailure', () => {
  it.each([
    ['a socket error with a private address', new Error('connect ECONNREFUSED 10.0.3.7:5432')],
    [
      "PostgreSQL's authentication error naming the database user",
      new Error('password authentication failed for user "warehouse_loader"'),
    ],
    ['a missing role', new Error('role "pipeline_admin" does not exist')],
    [
      "the cipher's missing key id",
      new Error('credentials were sealed with key k-2024-03, which is not configured'),
    ],
    ['a bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
    ['a thrown string', 'relation "cp.sources" does not exist'],
  ])('withholds %s behind internal_error and a reference, keeping the text for the logs', (_, thrown) => {
    const classified = classifyFailure(thrown, 'ab12cd34ef56');
    expect(classified.error).toEqual(internal('ab12cd34ef56'));
    expect(classified.internal).toBe(true);
    expect(classified.detail).toBe(thrown instanceof Error ? thrown.message : thrown);
  });

  it('keeps the stack of an internal error for the logs', () => {
    const thrown = new Error('connect ECONNREFUSED 10.0.3.7:5432');
    expect(classifyFailure(thrown, 'r').stack).toBe(thrown.stack);
  });

  it.each([
    [
      'stripe answered 401',
      new JobFailure('invalid_credentials', 'stripe answered 401', '{"error":"Invalid API Key"}'),
    ],
    [
      'stripe: connection_refused',
      new TransientJobError(
        'network_error',
        'stripe: connection_refused',
        'connect ECONNREFUSED 1.2.3.4:443',
      ),
    ],
    ['braze: http_503', new TransientJobError('destination_unavailable', 'braze: http_503')],
    [
      'the host is not a public address',
      new TenantFacingError('address_refused', 'shopify: the host is not a public address'),
    ],
  ])('keeps the message the code wrote for tenants (%s), the remote detail for the logs', (_, thrown) => {
    expect(classifyFailure(thrown, 'r')).toEqual({
      error: { code: thrown.code, message: thrown.message },
      internal: false,
      ...(thrown.detail !== undefined ? { detail: thrown.detail } : {}),
    });
  });

  it("keeps an AppError's code and message (a documented failure such as an unavailable warehouse)", () => {
    const thrown = new AppError(
      503,
      'warehouse_unavailable',
      'The warehouse is unavailable; try again later',
    );
    expect(classifyFailure(thrown, 'r')).toEqual({
      error: { code: 'warehouse_unavailable', message: 'The warehouse is unavailable; try again later' },
      internal: false,
    });
  });

  it('withholds a tenant-facing message that carries internal text anyway', () => {
    const thrown = new JobFailure('sync_failed', 'insert failed: connect ECONNREFUSED 10.0.3.7:5432');
    expect(classifyFailure(thrown, 'r1')).toMatchObject({ error: internal('r1'), internal: true });
  });
});

describe('withheldFields', () => {
  it('logs the reference, message and stack of an internal failure; only the remote detail of a tenant-facing one', () => {
    const thrown = new Error('connect ECONNREFUSED 10.0.3.7:5432');
    expect(withheldFields(classifyFailure(thrown, 'r1'), 'r1')).toEqual({
      reference: 'r1',
      detail: 'connect ECONNREFUSED 10.0.3.7:5432',
      stack: thrown.stack,
    });
    expect(
      withheldFields(
        classifyFailure(new JobFailure('invalid_credentials', 'stripe answered 401', 'body'), 'r2'),
        'r2',
      ),
    ).toEqual({ detail: 'body' });
    expect(withheldFields(classifyFailure(new JobFailure('x', 'y'), 'r3'), 'r3')).toEqual({});
  });
});

describe('newErrorReference', () => {
  it('is 12 hex characters, different each time', () => {
    const references = new Set(Array.from({ length: 100 }, newErrorReference));
    expect(references.size).toBe(100);
    for (const reference of references) expect(reference).toMatch(/^[0-9a-f]{12}$/);
  });
});

describe('shownError', () => {
  it('shows errors recorded before classification (code internal or step_failed) without their text', () => {
    expect(
      shownError({ code: 'internal', message: 'password authentication failed for user "x"', at: 't' }),
    ).toEqual({
      code: 'internal_error',
      message: 'An internal error occurred',
      at: 't',
    });
    expect(
      shownError({ code: 'step_failed', message: 'connect ECONNREFUSED 10.0.0.1:5432', step: 's' }),
    ).toEqual({
      code: 'internal_error',
      message: 'An internal error occurred',
      step: 's',
    });
  });

  it('shows classified errors as stored, and null as null', () => {
    const stored = { code: 'invalid_credentials', message: 'stripe answered 401', at: 't' };
    expect(shownError(stored)).toBe(stored);
    expect(shownError(null)).toBeNull();
    expect(shownError(undefined)).toBeNull();
  });
});
