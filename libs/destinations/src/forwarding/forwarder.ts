import { sharedGuardedFetch } from '@pipeline/egress';
import type { ResolvedDestination } from '@pipeline/tenancy';
import type { SkippedEvent } from './delivery-failure';
import type { OutboundEvent } from './outbound-event';
import type { VendorStatusClass } from './vendor-request';

// The forwarders' contract. It imports no forwarder: the app catalog (@pipeline/catalog) is
// the registry that knows them all.
export type { OutboundEvent } from './outbound-event';
export type { VendorStatusClass } from './vendor-request';

/** What a send achieved when every event was accepted or skipped. */
export interface SendOutcome {
  /** Events the vendor accepted. */
  sent: number;
  requests: number;
  /** Events with no equivalent at this vendor, not sent on purpose (libs/destinations/README.md, "Forwarding destinations"). */
  skipped: readonly SkippedEvent[];
}

/** A client of one vendor's public HTTP API. */
export interface Forwarder {
  /** Its app type in the app catalog (@pipeline/catalog), e.g. 'amplitude'. */
  readonly appType: string;
  /**
   * Sends every event to this destination; resolves when the vendor accepted all of them (or
   * they were skipped), throws DeliveryFailure otherwise. Consent is the caller's to check.
   */
  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome>;
}

export interface ForwarderOptions {
  /**
   * Base URLs by app type, in place of the vendor's (tests, proxies, vendor sandboxes). The
   * catalog passes an app type's only when it has a vendor host to replace (never a webhook's).
   */
  baseUrls?: Partial<Record<string, string>>;
  /**
   * In place of the guarded fetch (tests). Without it, requests to hosts a tenant chose go
   * through @pipeline/egress, which refuses internal addresses.
   */
  fetch?: typeof fetch;
  /** Private ranges tenant URLs may reach all the same (EGRESS_ALLOW_PRIVATE_RANGES). */
  allowPrivateRanges?: readonly string[];
  /** Per request, the answer's body included; 10 s by default. */
  timeoutMs?: number;
  /** Requests one send may make by halving after 413s; 16 by default. */
  maxSplitRequests?: number;
  /** Told of each vendor request's outcome: its status class, or `network` for no answer (metrics). */
  onResponse?: (statusClass: VendorStatusClass) => void;
}

/** What a vendor client is built with. */
export interface VendorClientOptions {
  /** Replaces the vendor's host (and the one the destination's config names). */
  baseUrl?: string;
  fetch: typeof fetch;
  timeoutMs: number;
  maxSplitRequests?: number;
  onResponse?: (statusClass: VendorStatusClass) => void;
}

/**
 * The settings one vendor client is built with. `baseUrl` is the operator's (VENDOR_BASE_URL_*),
 * trusted as configured; without it, requests to hosts a tenant chose go through the guarded
 * fetch, which refuses internal addresses.
 */
export function vendorClientOptions(options: ForwarderOptions = {}, baseUrl?: string): VendorClientOptions {
  return {
    ...(baseUrl ? { baseUrl: baseUrl.replace(/\/+$/, '') } : {}),
    fetch: options.fetch ?? (baseUrl ? globalThis.fetch : sharedGuardedFetch(options.allowPrivateRanges)),
    timeoutMs: options.timeoutMs ?? 10_000,
    ...(options.maxSplitRequests ? { maxSplitRequests: options.maxSplitRequests } : {}),
    ...(options.onResponse ? { onResponse: options.onResponse } : {}),
  };
}
