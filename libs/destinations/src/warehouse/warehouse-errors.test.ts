import fc from 'fast-check';
import { describeWarehouseError, redactSecrets, warehouseErrorKind } from './warehouse-errors';

const kinds = (errors: unknown[]) => errors.map(warehouseErrorKind);
const withCode = (code: unknown, message = 'x') => Object.assign(new Error(message), { code });

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

  it('misconfigured: login refused, database or schema missing, permission denied, TLS not as asked', () => {
    const codes = ['28000', '28P01', '3D000', '3F000', '42501'];
    expect(kinds(codes.map((code) => ({ code })))).toEqual(codes.map(() => 'misconfigured'));
    const tls = [
      'SELF_SIGNED_CERT_IN_CHAIN',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
      'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
      'CERT_HAS_EXPIRED',
      'ERR_TLS_CERT_ALTNAME_INVALID',
    ];
    expect(kinds(tls.map((code) => ({ code })))).toEqual(tls.map(() => 'misconfigured'));
    expect(warehouseErrorKind(new Error('The server does not support SSL connections'))).toBe(
      'misconfigured',
    );
    // Neighbours of the misconfigured states stay what their class says.
    expect(kinds(['28001', '3D001', '42502', '42P01', '3F001'].map((code) => ({ code })))).toEqual([
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
    ]);
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

describe('redactSecrets', () => {
  it('cuts every occurrence of each secret, also URL-encoded, and leaves the rest', () => {
    expect(redactSecrets('password "s3cr/t" for s3cr/t at s3cr%2Ft', ['s3cr/t'])).toBe(
      'password "[redacted]" for [redacted] at [redacted]',
    );
    expect(redactSecrets('nothing here', ['', 'absent'])).toBe('nothing here');
  });

  it('no secret survives, whatever text surrounds it', () => {
    // A secret sharing no character with the marker cannot be re-formed across a cut.
    const secrets = fc.string({ minLength: 1 }).filter((s) => !/[[\]redact]/.test(s));
    fc.assert(
      fc.property(fc.string(), secrets, fc.string(), (before, secret, after) => {
        const text = redactSecrets(`${before}${secret}${after}${encodeURIComponent(secret)}`, [secret]);
        expect(text.includes(secret)).toBe(false);
      }),
    );
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

// Whether rows that met an error are dead-lettered (data), parked until the warehouse is back
// (unavailable) or until somebody fixes it (misconfigured), or stop the process (unexpected).
// postgres/postgres-engine.test.ts meets the real errors of a real server.
describe('warehouseErrorKind, the verdicts of the engine', () => {
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
    expect(warehouseErrorKind(withCode(code))).toBe('misconfigured');
  });

  it('is misconfigured when the server has no TLS and we require it', () => {
    expect(warehouseErrorKind(new Error('The server does not support SSL connections'))).toBe(
      'misconfigured',
    );
    expect(warehouseErrorKind({ message: 42 })).toBe('unexpected');
  });

  it('gives the other verdicts by SQLSTATE class, network code and message', () => {
    expect(
      ['22P02', '23505', '57014', '55P03', '53300', 'ECONNREFUSED', '42P01', '42601', '28', '3D0000'].map(
        (code) => warehouseErrorKind(withCode(code)),
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
    expect(warehouseErrorKind(new Error('Connection terminated unexpectedly'))).toBe('unavailable');
    expect([null, undefined, 'ECONNREFUSED', 3].map(warehouseErrorKind)).toEqual([
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
    ]);
  });

  it('is unavailable for an aggregate when any of its errors is, and never misconfigured through one', () => {
    expect(warehouseErrorKind(new AggregateError([withCode('42601'), withCode('ECONNREFUSED')]))).toBe(
      'unavailable',
    );
    expect(warehouseErrorKind(new AggregateError([withCode('ECONNREFUSED'), withCode('ETIMEDOUT')]))).toBe(
      'unavailable',
    );
    expect(warehouseErrorKind(new AggregateError([withCode('42601'), withCode('28P01')]))).toBe('unexpected');
    expect(warehouseErrorKind({ errors: 'ECONNREFUSED' })).toBe('unexpected');
  });
});
