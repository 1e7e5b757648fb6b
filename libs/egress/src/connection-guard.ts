import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { addressRefusal, type AllowedRange } from './address-policy';
import type { ResolveAll } from './system-resolver';

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
  return cause !== error && isEgressRefusal(cause);
}

/**
 * Resolves every address of the name and refuses all of them if one is refused: the address a
 * socket then connects to is one this check saw, so DNS rebinding between a check and the
 * connection cannot happen.
 */
export function guardedLookup(allowed: readonly AllowedRange[], resolve: typeof dnsLookup): LookupFunction {
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

/** A URL's hostname without the brackets around an IPv6 address (`[::1]` is `::1`). */
export function unbracketed(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1');
}

/**
 * The refusal of a connection to an IP literal (Node connects to one without a lookup, so the
 * guarded lookup never sees it), or undefined for a name or an address the policy lets through.
 * The hostname may be bracketed (`[::1]`).
 */
export function literalRefusal(
  hostname: string,
  allowed: readonly AllowedRange[],
): EgressRefused | undefined {
  const host = unbracketed(hostname);
  if (isIP(host) === 0) return undefined;
  const range = addressRefusal(host, allowed);
  return range === undefined ? undefined : new EgressRefused(host, range);
}

/** Which guarded fetch a set of allowed ranges shares: the same set in any order, one key. */
export function allowedRangesKey(allowPrivateRanges: readonly string[]): string {
  return [...allowPrivateRanges].sort().join(',');
}

/**
 * A dns.lookup-shaped function over a resolver that answers every address of a name: for a
 * guarded connection whose names a test (or the operator's resolver) answers.
 */
export function lookupOver(resolve: ResolveAll): typeof dnsLookup {
  const lookup = (
    hostname: string,
    _options: unknown,
    callback: (error: Error | null, addresses: LookupAddress[]) => void,
  ) => {
    resolve(hostname).then(
      (addresses) =>
        callback(
          null,
          addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 })),
        ),
      // Whatever the resolver threw, the name has no address: the code a socket gives for that.
      (error: unknown) =>
        callback(
          Object.assign(new Error(`no address for ${hostname}`, { cause: error }), { code: 'ENOTFOUND' }),
          [],
        ),
    );
  };
  return lookup as unknown as typeof dnsLookup;
}
