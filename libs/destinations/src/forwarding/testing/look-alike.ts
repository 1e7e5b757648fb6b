import type { IncomingHttpHeaders } from 'node:http';
import type { ResolvedDestination } from '@pipeline/tenancy';

// What one vendor's look-alike is: how it answers a request, and what a destination pointed at
// it carries. Each vendor folder (forwarding/vendors/<vendor>/) defines one; the generic server
// (vendor-server.ts) records, scripts failures and delays the same way for all of them.

export interface Incoming {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface VendorState {
  expected: Record<string, string>;
  accept(endpoint: string, item: Record<string, unknown>): void;
  drop(endpoint: string, item: Record<string, unknown>): void;
  /** The scripted rejection of an item, if any. */
  rejection(item: Record<string, unknown>, endpoint: string): string | undefined;
  /**
   * What a vendor keeps between requests, per server: the users it has seen, the deletion
   * jobs and tasks it runs. Each vendor file owns its keys.
   */
  readonly store: Map<string, unknown>;
}

/** The value a vendor keeps under `key`, made by `create` on first use. */
export function stored<T>(state: VendorState, key: string, create: () => T): T {
  if (!state.store.has(key)) state.store.set(key, create());
  return state.store.get(key) as T;
}

/** The vendor's answer to a request no scripted failure took. */
export type LookAlikeHandler = (incoming: Incoming, state: VendorState) => Answer;

/**
 * The sample events the shared forwarder contract sends a vendor: plain `track` events by a known
 * user, the same received now (`recentTrack`: a vendor that refuses old events), `identify` calls
 * with an email, or recent track events with a click id (`click`).
 */
export type ContractEvents = 'track' | 'recentTrack' | 'identify' | 'click';

/** What the forwarder contract test (libs/catalog, forwarder-contract.test.ts) expects of a vendor. */
export interface ForwarderContract {
  /** Events per request; unset when a byte limit comes first, which the vendor's own test covers. */
  readonly perRequest?: number;
  /** The status it answers a wrong key with. */
  readonly authStatus: number;
  /** Events it maps to exactly one item each, when plain track events are skipped; `track` if unset. */
  readonly events?: ContractEvents;
  /**
   * The client first fetches what every send needs (Google's access token, HubSpot's property
   * list) and caches it: a first send warms that cache, so the answers a test scripts meet the
   * vendor's data endpoint, as with the other vendors.
   */
  readonly warm?: boolean;
}

export interface LookAlikeDefinition<Vendor extends string = string> {
  /** The app type it stands in for. */
  readonly vendor: Vendor;
  readonly kind: ResolvedDestination['kind'];
  /** The credentials it accepts unless told otherwise. */
  readonly credentials: Record<string, string>;
  /** Where a forwarder is pointed (the hook's path, for the webhook); the server's root if unset. */
  readonly urlPath?: string;
  /** The app config a destination needs (the pixel, customer or URL it knows); none if unset. */
  appConfig?(url: string): Record<string, unknown>;
  /** The credentials a destination carries when not all the accepted ones; all if unset. */
  destinationCredentials?(credentials: Record<string, string>): Record<string, unknown>;
  handle: LookAlikeHandler;
  /** The vendor's own error body for a status a test scripts. */
  scriptedBody(status: number): unknown;
  /** What the shared forwarder contract expects of its forwarder. */
  readonly contract: ForwarderContract;
}

/** Keeps the vendor's name a literal type, so the list of look-alikes names every vendor. */
export const defineLookAlike = <Vendor extends string>(
  definition: LookAlikeDefinition<Vendor>,
): LookAlikeDefinition<Vendor> => definition;

// Reading requests the way the vendors do.

export const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
export const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
export const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
export const isIsoTime = (value: unknown) =>
  typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(Date.parse(value));
export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
export const isJson = (incoming: Incoming) =>
  (incoming.headers['content-type'] ?? '').startsWith('application/json');
/** A SHA-256 hash in lowercase hex, as the advertising vendors take hashed identities. */
export const HASHED = /^[0-9a-f]{64}$/;

export function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
