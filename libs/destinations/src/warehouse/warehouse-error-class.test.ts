import { warehouseErrorClass } from './warehouse-error-class';

// Whether rows that met an error are dead-lettered (data), parked until the warehouse is back
// (unavailable) or until somebody fixes it (misconfigured), or stop the process (unexpected).
// postgres-engine.test.ts meets the real errors of a real server.

const withCode = (code: unknown, message = 'x') => Object.assign(new Error(message), { code });

describe('warehouseErrorClass', () => {
  it.each([
    '28000',
    '28P01',
    '3D000',
    '3F000',
    '42501',
    'DEPTH_ZERO_SELF_SIGNED_CERT',
    'SELF_SIGNED_CERT_IN_CHAIN',
    'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
    'CERT_HAS_EXPIRED',
    'ERR_TLS_CERT_ALTNAME_INVALID',
  ])('is misconfigured for %s', (code) => {
    expect(warehouseErrorClass(withCode(code))).toBe('misconfigured');
  });

  it('is misconfigured when the server has no TLS and we require it', () => {
    expect(warehouseErrorClass(new Error('The server does not support SSL connections'))).toBe(
      'misconfigured',
    );
    expect(warehouseErrorClass({ message: 42 })).toBe('unexpected');
  });

  it('leaves every other verdict to warehouseErrorKind', () => {
    expect(
      ['22P02', '23505', '57014', '55P03', '53300', 'ECONNREFUSED', '42P01', '42601', '28', '3D0000'].map(
        (code) => warehouseErrorClass(withCode(code)),
      ),
    ).toEqual([
      'data',
      'data',
      'unavailable',
      'unavailable',
      'unavailable',
      'unavailable',
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
    ]);
    expect(warehouseErrorClass(new Error('Connection terminated unexpectedly'))).toBe('unavailable');
    expect([null, undefined, 'ECONNREFUSED', 3].map(warehouseErrorClass)).toEqual([
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
    ]);
  });

  it('is unavailable for an aggregate when any of its errors is, and never misconfigured through one', () => {
    expect(warehouseErrorClass(new AggregateError([withCode('42601'), withCode('ECONNREFUSED')]))).toBe(
      'unavailable',
    );
    expect(warehouseErrorClass(new AggregateError([withCode('ECONNREFUSED'), withCode('ETIMEDOUT')]))).toBe(
      'unavailable',
    );
    expect(warehouseErrorClass(new AggregateError([withCode('42601'), withCode('28P01')]))).toBe(
      'unexpected',
    );
    expect(warehouseErrorClass({ errors: 'ECONNREFUSED' })).toBe('unexpected');
  });
});
