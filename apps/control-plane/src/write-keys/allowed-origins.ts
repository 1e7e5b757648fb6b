import { invalidField } from '../http/api-errors';

const hostname = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * Allowed origins are kept as hostnames: `https://Shop.Example.com:8443` becomes
 * `shop.example.com`. A request's Origin matches a hostname or any subdomain of it, so
 * wildcards are neither needed nor accepted.
 */
export function normalizeAllowedOrigins(values: readonly string[]): string[] {
  if (values.length > 50) throw invalidField('body.allowedOrigins', 'at most 50 origins');
  const normalized = values.map((raw, index) => {
    const value = raw.trim().toLowerCase();
    let host = value;
    if (/^[a-z][a-z0-9+.-]*:\/\//.test(value)) {
      try {
        const url = new URL(value);
        if (url.pathname !== '/' || url.search || url.hash || !['http:', 'https:'].includes(url.protocol)) {
          // Stryker disable next-line StringLiteral: equivalent, the catch below discards this message
          throw new Error('path');
        }
        host = url.hostname;
      } catch {
        throw invalidField(
          `body.allowedOrigins[${index}]`,
          'must be a hostname or an http(s) origin without a path',
        );
      }
    }
    // `localhost` is a hostname of one label, which the pattern takes.
    if (hostname.test(host)) return host;
    throw invalidField(
      `body.allowedOrigins[${index}]`,
      'must be a hostname (subdomains match), e.g. example.com',
    );
  });
  return [...new Set(normalized)];
}
