import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { addressRefusal, parseAllowedRanges, type AllowedRange } from './address-policy';

/**
 * A connection to an address the policy refuses. fetch rejects with TypeError("fetch failed")
 * and this as its `cause`; the message names the address, for logs only.
 */
export class EgressRefused extends Error {
  readonly code = 'EGRESS_REFUSED';

  constructor(
    readonly address: string,
    readonly range: string,
  ) {
    super(`refused to connect to ${address} (${range})`);
    this.name = 'EgressRefused';
  }
}

/** Whether a fetch rejection (or its cause) is a refusal of the guard. */
export function isEgressRefusal(error: unknown): boolean {
  if (error instanceof EgressRefused) return true;
  const cause = (error as { cause?: unknown } | null)?.cause;
  return cause !== undefined && cause !== error && isEgressRefusal(cause);
}

export interface GuardedFetchOptions {
  /** Operator-allowed ranges (EGRESS_ALLOW_PRIVATE_RANGES) for self-hosted deployments. */
  allowPrivateRanges?: readonly string[];
  /** Redirect hops a GET or HEAD follows, each checked again; 5 by default. */
  maxRedirects?: number;
  /** Name resolution; the system resolver by default (tests give their own). */
  lookup?: typeof dnsLookup;
  /** TCP and TLS connect timeout; 10 s by default. */
  connectTimeoutMs?: number;
}

/** Headers still sent when a redirect leaves the origin: never credentials or signatures. */
const CROSS_ORIGIN_HEADERS = new Set(['accept', 'accept-language', 'user-agent']);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Resolves every address of the name and refuses all of them if one is refused: the address a
 * socket then connects to is one this check saw, so DNS rebinding between a check and the
 * connection cannot happen.
 */
function guardedLookup(allowed: readonly AllowedRange[], resolve: typeof dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      for (const { address } of addresses) {
        const range = addressRefusal(address, allowed);
        if (range !== undefined) return callback(new EgressRefused(address, range), '', 0);
      }
      const [first] = addresses;
      if (!first)
        return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
      callback(null, first.address, first.family);
    });
  };
}

/**
 * The one HTTP path to tenant-supplied URLs (webhooks, a tenant's Segment-compatible
 * endpoint, a shop's host). Addresses are checked when the socket connects (IP literals
 * before, names through the lookup), so neither a URL nor a DNS answer nor a redirect reaches
 * an internal address. Redirects are handled here: a GET or HEAD follows up to maxRedirects
 * hops, each checked like the first and stripped of credentials when the origin changes; any
 * other method gets the 3xx answer itself, never a replay of its body elsewhere.
 */
export function createGuardedFetch(options: GuardedFetchOptions = {}): typeof fetch {
  const allowed = parseAllowedRanges(options.allowPrivateRanges ?? []);
  const maxRedirects = options.maxRedirects ?? 5;
  const connect = buildConnector({
    lookup: guardedLookup(allowed, options.lookup ?? dnsLookup),
    timeout: options.connectTimeoutMs ?? 10_000,
  });
  const dispatcher = new Agent({
    connect(connectOptions, callback) {
      const host = connectOptions.hostname.replace(/^\[(.*)\]$/, '$1');
      if (isIP(host) !== 0) {
        // Node connects to an IP literal without a lookup: check it here.
        const range = addressRefusal(host, allowed);
        if (range !== undefined) return callback(new EgressRefused(host, range), null);
      }
      connect(connectOptions, callback);
    },
  });

  const guardedFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const method = (init.method ?? 'GET').toUpperCase();
    const follow = (init.redirect ?? 'follow') === 'follow' && (method === 'GET' || method === 'HEAD');
    let url = new URL(input instanceof Request ? input.url : String(input));
    let headers = new Headers(init.headers);
    for (let hop = 0; ; hop += 1) {
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        throw new TypeError('fetch failed', { cause: new Error(`refused the scheme ${url.protocol}`) });
      }
      const response = (await undiciFetch(url, {
        ...(init as Parameters<typeof undiciFetch>[1]),
        headers: [...headers],
        redirect: 'manual',
        dispatcher,
      })) as unknown as Response;
      const location = response.headers.get('location');
      if (!follow || !REDIRECT_STATUSES.has(response.status) || location === null) return response;
      await response.body?.cancel();
      if (hop >= maxRedirects) {
        throw new TypeError('fetch failed', { cause: new Error(`more than ${maxRedirects} redirects`) });
      }
      const next = new URL(location, url);
      if (next.origin !== url.origin) {
        headers = new Headers([...headers].filter(([name]) => CROSS_ORIGIN_HEADERS.has(name)));
      }
      url = next;
    }
  };
  return guardedFetch as typeof fetch;
}

const shared = new Map<string, typeof fetch>();

/** One guarded fetch (and connection pool) per set of allowed ranges, shared by its callers. */
export function sharedGuardedFetch(allowPrivateRanges: readonly string[] = []): typeof fetch {
  const key = [...allowPrivateRanges].sort().join(',');
  let guarded = shared.get(key);
  if (!guarded) {
    guarded = createGuardedFetch({ allowPrivateRanges });
    shared.set(key, guarded);
  }
  return guarded;
}
