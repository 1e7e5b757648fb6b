import { isWarehouseConnectionFailure } from './connection-failure';

// Which pg errors mean the warehouse is not there (503 warehouse_unavailable) and which are a
// query's own failure. Pure: warehouse-unavailable.test.ts covers the answers end to end.

const withCode = (code: unknown, message = 'x') => Object.assign(new Error(message), { code });

describe('isWarehouseConnectionFailure', () => {
  it.each([
    'ECONNREFUSED',
    'ECONNRESET',
    'ENOTFOUND',
    'EAI_AGAIN',
    'ETIMEDOUT',
    'EHOSTUNREACH',
    'ENETUNREACH',
    'EPIPE',
    '08000',
    '08006',
    '08P01',
    '28000',
    '28P01',
    '3D000',
    '53300',
    '57P01',
    '57P02',
    '57P03',
  ])('is true for the code %s', (code) => {
    expect(isWarehouseConnectionFailure(withCode(code))).toBe(true);
  });

  it.each([
    '42601',
    '57014',
    '57P04',
    '57P00',
    '42P01',
    '3F000',
    '53200',
    '3D0001',
    'x08000',
    '0800',
    '280000',
    'EACCES',
    '',
  ])('is false for the code %s', (code) => {
    expect(isWarehouseConnectionFailure(withCode(code))).toBe(false);
  });

  it('reads the connect timeout and a dropped connection from the message, in any case', () => {
    expect(
      [
        'timeout exceeded when trying to connect',
        'Connection terminated unexpectedly',
        'connection terminated due to connection timeout',
        'pool: Timeout exceeded when trying to connect',
        'syntax error at or near "FROM"',
        'canceling statement due to statement timeout',
      ].map((message) => isWarehouseConnectionFailure(new Error(message))),
    ).toEqual([true, true, true, true, false, false]);
  });

  it('reads a shape, not a class: a plain object counts, a non-string code or message does not', () => {
    expect(isWarehouseConnectionFailure({ code: 'ECONNREFUSED' })).toBe(true);
    expect(isWarehouseConnectionFailure({ message: 'Connection terminated' })).toBe(true);
    expect(isWarehouseConnectionFailure({ code: 8006, message: 42 })).toBe(false);
    expect(isWarehouseConnectionFailure({ code: 53300 })).toBe(false);
    expect(isWarehouseConnectionFailure({ message: ['Connection terminated'] })).toBe(false);
    expect(isWarehouseConnectionFailure(withCode(undefined, 'syntax error'))).toBe(false);
    expect(isWarehouseConnectionFailure({})).toBe(false);
  });

  it('is true for an aggregate when any of its errors is one', () => {
    expect(
      isWarehouseConnectionFailure(new AggregateError([withCode('ECONNREFUSED'), withCode('ECONNREFUSED')])),
    ).toBe(true);
    expect(
      isWarehouseConnectionFailure(new AggregateError([withCode('42601'), withCode('ENETUNREACH')])),
    ).toBe(true);
    expect(isWarehouseConnectionFailure(new AggregateError([withCode('42601'), withCode('57014')]))).toBe(
      false,
    );
    expect(isWarehouseConnectionFailure({ errors: 'ECONNREFUSED' })).toBe(false);
  });

  it('is false for what is not an object', () => {
    expect(['ECONNREFUSED', null, undefined, 3].map(isWarehouseConnectionFailure)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
