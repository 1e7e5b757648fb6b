import { describeWarehouseError, warehouseErrorKind } from './warehouse-errors';

const kinds = (errors: unknown[]) => errors.map(warehouseErrorKind);

describe('warehouseErrorKind', () => {
  it('data: classes 22, 23 and 54, which retrying cannot fix', () => {
    expect(kinds(['22021', '22P05', '23505', '23502', '54001'].map((code) => ({ code })))).toEqual([
      'data',
      'data',
      'data',
      'data',
      'data',
    ]);
  });

  it('unavailable: classes 08, 40, 53, 57, 58, lock timeouts, network errors and lost connections', () => {
    const codes = ['08006', '40001', '40P01', '53300', '57014', '58030', '55P03'];
    expect(kinds(codes.map((code) => ({ code })))).toEqual(codes.map(() => 'unavailable'));
    const network = [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
    ];
    expect(kinds(network.map((code) => ({ code })))).toEqual(network.map(() => 'unavailable'));
    const messages = [
      'Connection terminated unexpectedly',
      'connection timeout',
      'timeout exceeded when trying to connect',
      'Client has encountered a connection error and is not queryable',
      'Client was closed and is not queryable',
      'CONNECTION TERMINATED',
    ];
    expect(kinds(messages.map((message) => new Error(message)))).toEqual(messages.map(() => 'unavailable'));
  });

  it('unexpected: other SQLSTATEs (a missing table, a syntax error), other codes and anything else', () => {
    expect(
      kinds([
        { code: '42P01' },
        { code: '42601' },
        { code: '55000' },
        { code: 'EACCES' },
        { code: '2250' },
        { code: '225001' },
        { code: '22a00' },
        { code: 22001 },
        new Error('boom'),
        { message: 42 },
        { message: ['Connection terminated'] },
        null,
        undefined,
        'text',
      ]),
    ).toEqual(Array.from({ length: 14 }, () => 'unexpected'));
  });

  it('a SQLSTATE-shaped code is never read as a message', () => {
    expect(warehouseErrorKind({ code: '42P01', message: 'Connection terminated' })).toBe('unexpected');
    expect(warehouseErrorKind({ code: 'EACCES', message: 'Connection terminated' })).toBe('unavailable');
  });
});

describe('describeWarehouseError', () => {
  it('is the SQLSTATE and message, or what there is', () => {
    expect(describeWarehouseError({ code: '22021', message: 'invalid byte sequence' })).toBe(
      '22021 invalid byte sequence',
    );
    expect(describeWarehouseError(new Error('boom'))).toBe('boom');
    expect(describeWarehouseError({ code: '23505' })).toBe('23505 [object Object]');
    expect(describeWarehouseError('plain')).toBe('plain');
    expect(describeWarehouseError(null)).toBe('null');
  });
});
