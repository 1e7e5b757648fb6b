import { isIP } from 'node:net';
import { addressRefusal, parseAllowedRanges } from './address-policy';
import { unbracketed } from './connection-guard';
import { systemResolve, type ResolveAll } from './system-resolver';

export type { ResolveAll } from './system-resolver';

export interface TenantUrlCheckOptions {
  /** Operator-allowed ranges (EGRESS_ALLOW_PRIVATE_RANGES). */
  allowPrivateRanges?: readonly string[];
  resolve?: ResolveAll;
  /** How long a name may take to resolve before it is judged at send time only; 2 s by default. */
  resolveTimeoutMs?: number;
}

/** Why a URL a tenant sets is refused when it is saved: the category, never an address. */
export type TenantUrlRefusal = 'not_a_url' | 'scheme_not_allowed' | 'credentials_in_url' | 'address_refused';

/**
 * Judges a URL a tenant saves (a webhook, a Segment-compatible endpoint, a shop's host) by the
 * policy the guarded fetch applies when it connects: an http(s) URL without user info whose
 * host is not local and whose addresses (an IP literal, or every address its name has now)
 * are public. A name that does not resolve in time passes: the guarded fetch still checks
 * every connection, so this check only refuses early what would be refused anyway.
 */
export function tenantUrlChecker(options: TenantUrlCheckOptions = {}) {
  const allowed = parseAllowedRanges(options.allowPrivateRanges ?? []);
  const resolve = options.resolve ?? systemResolve;
  const timeoutMs = options.resolveTimeoutMs ?? 2000;

  const addressesOf = async (hostname: string): Promise<readonly string[]> => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<readonly string[]>((done) => {
      timer = setTimeout(() => done([]), timeoutMs);
    });
    try {
      return await Promise.race([resolve(hostname).catch(() => []), timeout]);
    } finally {
      clearTimeout(timer);
    }
  };

  return async (value: string): Promise<TenantUrlRefusal | undefined> => {
    if (!URL.canParse(value)) return 'not_a_url';
    const url = new URL(value);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'scheme_not_allowed';
    if (url.username !== '' || url.password !== '') return 'credentials_in_url';
    const host = unbracketed(url.hostname).replace(/\.$/, '');
    if (isIP(host) !== 0) return addressRefusal(host, allowed) === undefined ? undefined : 'address_refused';
    // RFC 6761: localhost and its subdomains are the machine itself, whatever a resolver says.
    const local = host === 'localhost' || host.endsWith('.localhost');
    const addresses = local ? ['127.0.0.1', '::1'] : await addressesOf(host);
    return addresses.some((address) => addressRefusal(address, allowed) !== undefined)
      ? 'address_refused'
      : undefined;
  };
}

export type TenantUrlChecker = ReturnType<typeof tenantUrlChecker>;
