import { lookup as dnsLookup } from 'node:dns/promises';

/** Resolves a name to all its addresses (the system resolver by default; tests give their own). */
export type ResolveAll = (hostname: string) => Promise<readonly string[]>;

/** Every address the system resolver has for a name, in its own order. */
export const systemResolve: ResolveAll = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map((entry) => entry.address);
