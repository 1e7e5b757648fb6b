import { clickhouseErrorKind } from './clickhouse-errors';

// As @clickhouse/client reports a server's error: ClickHouseError with the code as text and
// the error's name as `type`.
const serverError = (code: number, type = 'SOME_ERROR') =>
  Object.assign(new Error(`Code: ${code}. DB::Exception: x. (${type})`), { code: String(code), type });
const kinds = (codes: number[]) => codes.map((code) => clickhouseErrorKind(serverError(code)));

describe('clickhouseErrorKind', () => {
  it('data: values a column refuses', () => {
    const codes = [6, 25, 26, 27, 38, 41, 53, 69, 70, 72, 117, 131, 321, 349, 407];
    expect(kinds(codes)).toEqual(codes.map(() => 'data'));
  });

  it('data: a value JSON cannot carry (22000, as copy-text reports it)', () => {
    expect(clickhouseErrorKind(Object.assign(new Error('x'), { code: '22000' }))).toBe('data');
  });

  it('unavailable: time limits, overload, too many parts, replication and cancelled queries', () => {
    const codes = [159, 160, 202, 203, 209, 210, 225, 236, 241, 242, 252, 319, 394, 425, 439, 473, 999];
    expect(kinds(codes)).toEqual(codes.map(() => 'unavailable'));
  });

  it('misconfigured: login, grants, a missing database or cluster, a read-only user', () => {
    const codes = [81, 164, 192, 193, 194, 195, 291, 497, 516, 701];
    expect(kinds(codes)).toEqual(codes.map(() => 'misconfigured'));
  });

  it('unexpected: any other server error (a syntax error is our bug)', () => {
    expect(kinds([62, 47, 60, 1, 0])).toEqual([
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
    ]);
  });

  it('reads a code only from a server error: a socket error has no type', () => {
    expect(clickhouseErrorKind({ code: '241' })).toBe('unexpected');
    expect(clickhouseErrorKind({ code: 'x', type: 'NOT_A_NUMBER' })).toBe('unexpected');
    expect(clickhouseErrorKind({ code: 241, type: 'MEMORY_LIMIT_EXCEEDED' })).toBe('unexpected');
  });

  it('unavailable: the network between us and the server', () => {
    const codes = [
      'ECONNREFUSED',
      'ECONNRESET',
      'ECONNABORTED',
      'EPIPE',
      'ETIMEDOUT',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'EAI_AGAIN',
      'UND_ERR_SOCKET',
    ];
    expect(codes.map((code) => clickhouseErrorKind(Object.assign(new Error('x'), { code })))).toEqual(
      codes.map(() => 'unavailable'),
    );
    expect(clickhouseErrorKind(new Error('Timeout error.'))).toBe('unavailable');
    expect(clickhouseErrorKind(new Error('socket hang up'))).toBe('unavailable');
    expect(clickhouseErrorKind(new Error('the socket hang up'))).toBe('unexpected');
  });

  it('misconfigured: TLS not as the connection asks, and an address the egress policy refuses', () => {
    const codes = [
      'ERR_TLS_CERT_ALTNAME_INVALID',
      'ERR_SSL_WRONG_VERSION_NUMBER',
      'CERT_HAS_EXPIRED',
      'DEPTH_ZERO_SELF_SIGNED_CERT',
      'SELF_SIGNED_CERT_IN_CHAIN',
      'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
    ];
    expect(codes.map((code) => clickhouseErrorKind(Object.assign(new Error('x'), { code })))).toEqual(
      codes.map(() => 'misconfigured'),
    );
    expect(clickhouseErrorKind(Object.assign(new Error('refused'), { name: 'EgressRefused' }))).toBe(
      'misconfigured',
    );
    expect(clickhouseErrorKind(Object.assign(new Error('x'), { code: 'XERR_TLS_' }))).toBe('unexpected');
  });

  it('reads names and messages only from text', () => {
    expect(clickhouseErrorKind({ code: ['ERR_TLS_CERT_ALTNAME_INVALID'] })).toBe('unexpected');
    expect(clickhouseErrorKind({ message: ['socket hang up'] })).toBe('unexpected');
  });

  it("follows an error's cause, once", () => {
    expect(clickhouseErrorKind(new Error('wrapped', { cause: serverError(516) }))).toBe('misconfigured');
    const loop = new Error('loop') as Error & { cause?: unknown };
    loop.cause = loop;
    expect(clickhouseErrorKind(loop)).toBe('unexpected');
  });

  it('unexpected: what is not an error object', () => {
    expect([null, undefined, 'ECONNREFUSED', 42].map(clickhouseErrorKind)).toEqual([
      'unexpected',
      'unexpected',
      'unexpected',
      'unexpected',
    ]);
  });
});
