/**
 * Meta Conversions API destination (app type `meta_conversions`, kind advertising: sent only
 * with marketing consent, which the caller checks):
 * `POST https://graph.facebook.com/{apiVersion}/{pixelId}/events`, JSON body
 * `{"data":[…], "access_token":"…", "test_event_code"?:"…"}` (the token in the body, which
 * the Graph API takes like the query parameter, so it stays out of URLs and access logs), at
 * most 1000 events per request.
 *
 * Credentials: `accessToken` (a Conversions API system-user token). App config: `pixelId`
 * (the dataset/pixel id, digits, required), `apiVersion` (default `v24.0`), `testEventCode`
 * (optional: events go to Events Manager's Test Events tab only).
 *
 * Which events: track calls, with Segment's e-commerce names mapped to Meta's standard events
 * (Order Completed → Purchase, Product Added → AddToCart, Product Viewed → ViewContent,
 * Checkout Started → InitiateCheckout, Products Searched → Search, Payment Info Entered →
 * AddPaymentInfo, Product Added to Wishlist → AddToWishlist, Signed Up →
 * CompleteRegistration; any other name is sent as a custom event), and page calls as
 * `PageView`. Screen, identify, group and alias calls are skipped. Skipped too: events older
 * than 7 days (Meta fails the whole request for one such event) and a Purchase without a value.
 *
 * Each event: `event_name`, `event_time` (unix seconds, the corrected event time; a time
 * ahead of now is sent as now), `event_id` = the messageId (Meta deduplicates browser and
 * server events on event_name + event_id), `action_source` `website` when the event has a
 * page URL and the server saw a user agent (Meta requires both for website events), else
 * `other`; `event_source_url` (the page URL); `user_data`: `em` (SHA-256 of the trimmed,
 * lowercased email), `ph` (SHA-256 of the phone's digits, leading zeros dropped), `fn`/`ln`
 * (SHA-256 of the lowercased first/last name), `external_id` (SHA-256 of the userId, else the
 * anonymousId), values already hashed (64 hex digits) sent as they are; `client_ip_address`
 * and `client_user_agent` unhashed, from the receipt; `fbp` and `fbc` from
 * `context.clickId.fbp`/`.fbc` (an `fbclid` becomes `fb.1.<event ms>.<fbclid>`). Email, phone
 * and names come from the event's properties, then from its traits (`context.traits`).
 * `custom_data`: `value` (properties.value, else revenue, else total), `currency` (ISO 4217,
 * upper case; USD for a Purchase without one; a value without a currency is left out, as Meta
 * needs both), `order_id`, `content_ids` (products' ids).
 *
 * Answers: 200 `{"events_received":N}`; Graph errors `{"error":{"code",…}}`: code 190/102 (bad
 * token) and 10/200-299 (permission missing) stop the send; rate limits (4, 17, 32, 613, 80004) and transient errors are
 * retryable (60 s unless Retry-After says otherwise); code 100 (invalid parameter: Meta
 * processes none of a request with an invalid event, and does not say which) halves the request
 * until the event is found, which alone fails permanently (within the send's split-request cap,
 * DELIVERY_MAX_SPLIT_REQUESTS; past it the rest is retried later); any other 400 fails the
 * request's events permanently; 5xx are retryable.
 */
import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type Verdict } from '../../batch-delivery';
import { InvalidConfig, optionalText, requiredText } from '../../destination-settings';
import { defined } from '../../event-fields';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';
import { metaServerEventOf, type MetaServerEvent } from './meta-conversions-mapping';

const DEFAULT_HOST = 'https://graph.facebook.com';
const DEFAULT_VERSION = 'v24.0';

/** 1000 events per request (Meta); the byte cap is ours. */
const limits = { maxItems: 1000, maxBodyBytes: 4 * 1024 * 1024 };
const RATE_LIMIT_PAUSE_MS = 60_000;

/** Graph's error-handling guide: unknown/service errors, throttling, a temporary block. */
const RETRYABLE_GRAPH_CODES = new Set([1, 2, 4, 17, 32, 341, 368, 613, 80004]);

/** The Graph API error object of an answer, if it has one. */
function graphError(response: VendorResponse): Record<string, unknown> | undefined {
  const error = (response.json as { error?: unknown } | undefined)?.error;
  return error !== null && typeof error === 'object' ? (error as Record<string, unknown>) : undefined;
}

function verdictOf(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  if (response.status === 413) return { kind: 'too_large' };
  const failure = failureOfStatus(response, { defaultRetryAfterMs: RATE_LIMIT_PAUSE_MS });
  const error = graphError(response);
  if (!error) return { kind: 'failed', failure };
  const code = Number(error.code);
  const detail = [error.message, error.error_user_msg].filter((m) => typeof m === 'string').join(': ');
  // A bad or expired token, or a permission the token lacks (10, 200-299): every request fails.
  if (code === 190 || code === 102 || code === 10 || (code >= 200 && code <= 299))
    return { kind: 'failed', failure: { ...failure, detail, retryable: false, fatal: true } };
  if (RETRYABLE_GRAPH_CODES.has(code) || error.is_transient === true)
    return {
      kind: 'failed',
      failure: {
        ...failure,
        detail,
        retryable: true,
        retryAfterMs: failure.retryAfterMs ?? RATE_LIMIT_PAUSE_MS,
      },
    };
  // An invalid parameter fails the whole request without naming the event: find it by halving.
  if (code === 100) return { kind: 'isolate', failure: { ...failure, detail } };
  return { kind: 'failed', failure: { ...failure, detail } };
}

/** Meta Conversions API (`POST /{version}/{pixelId}/events`). */
export class MetaConversionsForwarder implements Forwarder {
  readonly appType = 'meta_conversions';

  constructor(
    private readonly client: VendorClientOptions,
    /** The clock the 7-day limit is measured by (tests). */
    private readonly now: () => number = Date.now,
  ) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const accessToken = requiredText(destination.credentials, 'accessToken', 'credentials');
      const pixelId = requiredText(destination.appConfig, 'pixelId', 'appConfig');
      if (!/^\d{1,32}$/.test(pixelId))
        throw new InvalidConfig('appConfig.pixelId must be the pixel’s numeric id');
      const version = optionalText(destination.appConfig, 'apiVersion', 'appConfig') ?? DEFAULT_VERSION;
      if (!/^v\d{1,3}\.\d{1,2}$/.test(version))
        throw new InvalidConfig('appConfig.apiVersion must look like v24.0');
      const testEventCode = optionalText(destination.appConfig, 'testEventCode', 'appConfig');
      const baseUrl = this.client.baseUrl ?? DEFAULT_HOST;
      const envelope = defined({ access_token: accessToken, test_event_code: testEventCode });
      const endpoint: Endpoint<MetaServerEvent> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ data: [], ...envelope })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/${version}/${pixelId}/events`,
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ data: items, ...envelope }),
        }),
        verdict: verdictOf,
      };
      const now = this.now();
      const mapped = ledger.mapEvents((outbound) => {
        const item = metaServerEventOf(outbound, now);
        return typeof item === 'string' ? item : [item];
      });
      await ledger.deliver(endpoint, mapped);
    });
  }
}
