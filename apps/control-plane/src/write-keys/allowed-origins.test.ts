import { AppError } from '@pipeline/errors';
import { normalizeAllowedOrigins } from './allowed-origins';

// The rules of allowed-origin normalization, without the HTTP layer (write-keys.test.ts covers
// the API over a real database).

function refusal(values: string[]): { path: string; message: string } | undefined {
  try {
    normalizeAllowedOrigins(values);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    expect({ status: error.status, code: error.code }).toEqual({ status: 400, code: 'validation_failed' });
    const errors = error.details?.errors as { path: string; message: string }[];
    expect(errors).toHaveLength(1);
    return errors[0];
  }
  return undefined;
}

const originMessage = 'must be a hostname or an http(s) origin without a path';
const hostMessage = 'must be a hostname (subdomains match), e.g. example.com';

describe('normalizeAllowedOrigins', () => {
  it('keeps hostnames: lower-cased, trimmed, without scheme or port, each once, in order', () => {
    expect(
      normalizeAllowedOrigins([
        ' https://Shop.Example.com:8443 ',
        'example.org',
        'http://example.org/',
        'localhost',
        'http://localhost:3000',
        'a-b.c0.example',
      ]),
    ).toEqual(['shop.example.com', 'example.org', 'localhost', 'a-b.c0.example']);
    expect(normalizeAllowedOrigins([])).toEqual([]);
  });

  it('takes 50 origins and refuses 51', () => {
    const hosts = Array.from({ length: 51 }, (_, i) => `h${i}.example.com`);
    expect(normalizeAllowedOrigins(hosts.slice(0, 50))).toHaveLength(50);
    expect(refusal(hosts)).toEqual({ path: 'body.allowedOrigins', message: 'at most 50 origins' });
  });

  it.each([
    ['https://example.com/path', originMessage],
    ['https://example.com/?q=1', originMessage],
    ['https://example.com/#top', originMessage],
    ['https://example.com?q=1', originMessage],
    ['https://example.com#top', originMessage],
    ['ftp://example.com', originMessage],
    ['wss://example.com', originMessage],
    ['https://', originMessage],
    // A scheme starts the value, or it is no scheme: this is a (bad) hostname.
    ['1https://example.com', hostMessage],
    ['*.example.com', hostMessage],
    ['exa mple.com', hostMessage],
    ['example.com.', hostMessage],
    ['-example.com', hostMessage],
    ['example-.com', hostMessage],
    ['', hostMessage],
    [`${'a'.repeat(64)}.com`, hostMessage],
    [`${'a.'.repeat(126)}ab`, hostMessage],
  ])('refuses %j at its index', (bad, message) => {
    expect(refusal(['example.com', bad])).toEqual({ path: 'body.allowedOrigins[1]', message });
  });

  it('takes a label of 63 characters and a name of 253', () => {
    expect(normalizeAllowedOrigins([`${'a'.repeat(63)}.com`])).toEqual([`${'a'.repeat(63)}.com`]);
    const longest = `${'a.'.repeat(125)}abc`;
    expect(longest).toHaveLength(253);
    expect(normalizeAllowedOrigins([longest])).toEqual([longest]);
  });
});
