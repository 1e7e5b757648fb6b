import type { ReceiptContext, TrackingEvent } from '@pipeline/events';
import { sharedGuardedFetch } from '@pipeline/egress';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { AmplitudeForwarder } from './amplitude-forwarder';
import { BrazeForwarder } from './braze-forwarder';
import { CustomerIoForwarder } from './customer-io-forwarder';
import { MixpanelForwarder } from './mixpanel-forwarder';
import { OneSignalForwarder } from './onesignal-forwarder';
import { SegmentForwarder } from './segment-forwarder';
import { WebhookForwarder } from './webhook-forwarder';

export { DeliveryFailure, type SkippedEvent, type UndeliveredEvent } from './delivery-failure';
import type { SkippedEvent } from './delivery-failure';

/** One accepted event with what the server knew when it arrived. */
export interface OutboundEvent {
  event: TrackingEvent;
  receipt: ReceiptContext;
}

/** What a send achieved when every event was accepted or skipped. */
export interface SendOutcome {
  /** Events the vendor accepted. */
  sent: number;
  requests: number;
  /** Events with no equivalent at this vendor, not sent on purpose (README, "Forwarding destinations"). */
  skipped: readonly SkippedEvent[];
}

/** A client of one vendor's public HTTP API. */
export interface Forwarder {
  /** Key of the app catalog, e.g. 'amplitude'. */
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
  /** Base URLs by app type, in place of the vendor's (tests, proxies, vendor sandboxes). */
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
}

/** What a vendor client is built with. */
export interface VendorClientOptions {
  /** Replaces the vendor's host (and the one the destination's config names). */
  baseUrl?: string;
  fetch: typeof fetch;
  timeoutMs: number;
  maxSplitRequests?: number;
}

const forwarders = {
  amplitude: (options: VendorClientOptions) => new AmplitudeForwarder(options),
  mixpanel: (options: VendorClientOptions) => new MixpanelForwarder(options),
  braze: (options: VendorClientOptions) => new BrazeForwarder(options),
  customer_io: (options: VendorClientOptions) => new CustomerIoForwarder(options),
  segment: (options: VendorClientOptions) => new SegmentForwarder(options),
  onesignal: (options: VendorClientOptions) => new OneSignalForwarder(options),
  webhook: (options: VendorClientOptions) => new WebhookForwarder(options),
} as const satisfies Record<string, (options: VendorClientOptions) => Forwarder>;

/** The app types events can be forwarded to. */
export const forwardingAppTypes = Object.keys(forwarders) as (keyof typeof forwarders)[];

/** The client for an app type, or undefined when events cannot be forwarded to it. */
export function forwarderFor(appType: string, options: ForwarderOptions = {}): Forwarder | undefined {
  if (!Object.hasOwn(forwarders, appType)) return undefined;
  // A webhook's URL is always the tenant's; every other client sends only to the operator's
  // base URL when one is set (VENDOR_BASE_URL_*), which is trusted as configured.
  const baseUrl = appType === 'webhook' ? undefined : options.baseUrls?.[appType];
  return forwarders[appType as keyof typeof forwarders]({
    ...(baseUrl ? { baseUrl: baseUrl.replace(/\/+$/, '') } : {}),
    fetch: options.fetch ?? (baseUrl ? globalThis.fetch : sharedGuardedFetch(options.allowPrivateRanges)),
    timeoutMs: options.timeoutMs ?? 10_000,
    ...(options.maxSplitRequests ? { maxSplitRequests: options.maxSplitRequests } : {}),
  });
}
