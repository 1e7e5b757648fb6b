import { lookup as dnsLookup } from 'node:dns';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { parseAllowedRanges } from './address-policy';
import { allowedRangesKey, guardedLookup, literalRefusal } from './connection-guard';
import {
  assertHttpScheme,
  followsRedirects,
  headersForHop,
  isRedirect,
  redirectTarget,
} from './redirect-policy';

export { EgressRefused, isEgressRefusal } from './connection-guard';

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
      const refused = literalRefusal(connectOptions.hostname, allowed);
      if (refused) return callback(refused, null);
      connect(connectOptions, callback);
    },
  });

  const guardedFetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const follow = followsRedirects(init);
    let url = new URL(input instanceof Request ? input.url : String(input));
    let headers = new Headers(init.headers);
    for (let hop = 0; ; hop += 1) {
      assertHttpScheme(url);
      const response = (await undiciFetch(url, {
        ...(init as Parameters<typeof undiciFetch>[1]),
        headers: [...headers],
        redirect: 'manual',
        dispatcher,
      })) as unknown as Response;
      const location = response.headers.get('location');
      if (!follow || !isRedirect(response.status, location)) return response;
      await response.body?.cancel();
      const next = redirectTarget(location, url, hop, maxRedirects);
      headers = headersForHop(headers, url, next);
      url = next;
    }
  };
  return guardedFetch as typeof fetch;
}

const shared = new Map<string, typeof fetch>();

/** One guarded fetch (and connection pool) per set of allowed ranges, shared by its callers. */
export function sharedGuardedFetch(allowPrivateRanges: readonly string[] = []): typeof fetch {
  const key = allowedRangesKey(allowPrivateRanges);
  let guarded = shared.get(key);
  if (!guarded) {
    guarded = createGuardedFetch({ allowPrivateRanges });
    shared.set(key, guarded);
  }
  return guarded;
}
