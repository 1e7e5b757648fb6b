import { describeNetworkFailure } from './network-failure';
import { EgressRefused } from './connection-guard';

const fetchFailed = (cause: unknown) => new TypeError('fetch failed', { cause });
const socketError = (code: string, message = `${code} message`) =>
  Object.assign(new Error(message), { code });

describe('describeNetworkFailure', () => {
  it.each([
    ['EGRESS_REFUSED', 'address_refused'],
    ['ENOTFOUND', 'dns_lookup_failed'],
    ['EAI_AGAIN', 'dns_lookup_failed'],
    ['ECONNREFUSED', 'connection_refused'],
    ['ECONNRESET', 'connection_reset'],
    ['UND_ERR_SOCKET', 'connection_reset'],
    ['EPIPE', 'connection_reset'],
    ['UND_ERR_CONNECT_TIMEOUT', 'connect_timeout'],
    ['ETIMEDOUT', 'connect_timeout'],
    ['CERT_HAS_EXPIRED', 'tls_error'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'tls_error'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'tls_error'],
    ['EHOSTUNREACH', 'network_error'],
  ])('reads %s as %s, keeping the code and message for the logs', (code, category) => {
    expect(describeNetworkFailure(fetchFailed(socketError(code)))).toEqual({
      category,
      detail: `${code}: ${code} message`,
    });
  });

  it('names the refused address in the detail only', () => {
    const failure = describeNetworkFailure(fetchFailed(new EgressRefused('10.0.0.12', 'private')));
    expect(failure).toEqual({
      category: 'address_refused',
      detail: 'EGRESS_REFUSED: refused to connect to 10.0.0.12 (private)',
    });
  });

  it('without a coded cause: network_error, with what there is', () => {
    expect(describeNetworkFailure(fetchFailed(new Error('more than 5 redirects')))).toEqual({
      category: 'network_error',
      detail: 'more than 5 redirects',
    });
    expect(describeNetworkFailure(new Error('boom'))).toEqual({ category: 'network_error', detail: 'boom' });
    expect(describeNetworkFailure('text')).toEqual({ category: 'network_error', detail: 'text' });
    expect(describeNetworkFailure(undefined)).toEqual({ category: 'network_error', detail: 'undefined' });
  });

  it('keeps only a code and a message that are text', () => {
    expect(describeNetworkFailure(fetchFailed({ code: 42, message: 'socket hang up' }))).toEqual({
      category: 'network_error',
      detail: 'socket hang up',
    });
    expect(describeNetworkFailure(fetchFailed({ code: 'ECONNRESET', message: 7 }))).toEqual({
      category: 'connection_reset',
      detail: 'ECONNRESET: fetch failed',
    });
    expect(describeNetworkFailure(fetchFailed({ code: 'ECONNRESET' }))).toEqual({
      category: 'connection_reset',
      detail: 'ECONNRESET: fetch failed',
    });
    expect(describeNetworkFailure({ message: 5 })).toEqual({
      category: 'network_error',
      detail: '[object Object]',
    });
  });
});
