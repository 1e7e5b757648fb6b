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
import { defined, eventTime, pageFields, payloadOf, userAgentOf, userIdOf } from '../../event-fields';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { clickIdOf, emailOrHashOf, hashedOnce, personField } from '../../hashed-identity';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';

const DEFAULT_HOST = 'https://graph.facebook.com';
const DEFAULT_VERSION = 'v24.0';

/** 1000 events per request (Meta); the byte cap is ours. */
const limits = { maxItems: 1000, maxBodyBytes: 4 * 1024 * 1024 };

/** Meta refuses events older than 7 days; a minute's margin for the time in flight. */
export const META_MAX_AGE_MS = 7 * 86_400_000 - 60_000;
const RATE_LIMIT_PAUSE_MS = 60_000;

/** Segment's e-commerce event names and Meta's standard events. */
export const metaStandardEvents: Record<string, string> = {
  'Order Completed': 'Purchase',
  'Product Added': 'AddToCart',
  'Product Viewed': 'ViewContent',
  'Checkout Started': 'InitiateCheckout',
  'Products Searched': 'Search',
  'Payment Info Entered': 'AddPaymentInfo',
  'Product Added to Wishlist': 'AddToWishlist',
  'Signed Up': 'CompleteRegistration',
};

export type MetaServerEvent = Record<string, unknown> & {
  event_name: string;
  event_time: number;
  event_id: string;
  action_source: 'website' | 'other';
  user_data: Record<string, unknown>;
};

/** Meta's normalisation: the phone's digits without leading zeros (with its country code). */
export function metaPhone(value: string): string | undefined {
  const digits = value.replace(/\D/g, '').replace(/^0+/, '');
  return digits.length > 0 ? digits : undefined;
}

const hashed = (value: string | undefined) => (value ? [hashedOnce(value)] : undefined);

const numberOf = (value: unknown): number | undefined => {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  return undefined;
};

function customDataOf(properties: Record<string, unknown>, eventName: string) {
  const value = numberOf(properties.value) ?? numberOf(properties.revenue) ?? numberOf(properties.total);
  const currencyText =
    // Stryker disable next-line StringLiteral: any text but a currency code is refused by the ISO 4217 check below
    typeof properties.currency === 'string' ? properties.currency.trim().toUpperCase() : '';
  const currency = /^[A-Z]{3}$/.test(currencyText)
    ? currencyText
    : eventName === 'Purchase'
      ? 'USD'
      : undefined;
  const orderId = [properties.order_id, properties.orderId].find((v) => typeof v === 'string' && v !== '');
  const contentIds = Array.isArray(properties.products)
    ? (properties.products as unknown[]).flatMap((product) => {
        // Stryker disable next-line ConditionalExpression: a string, number or boolean destructures to no ids either
        if (product === null || typeof product !== 'object') return [];
        const { product_id, sku, id } = product as Record<string, unknown>;
        const found = [product_id, sku, id].find((v) => typeof v === 'string' && v !== '');
        return typeof found === 'string' ? [found] : [];
      })
    : [];
  return defined({
    value: currency !== undefined ? value : undefined,
    currency: value !== undefined ? currency : undefined,
    order_id: orderId as string | undefined,
    content_ids: contentIds.length > 0 ? contentIds : undefined,
  });
}

/** Our event as a Meta server event, or the reason it has none. */
export function metaServerEventOf(
  outbound: OutboundEvent,
  now: number = Date.now(),
): MetaServerEvent | string {
  const { event, receipt } = outbound;
  let eventName: string;
  if (event.type === 'track')
    // Own keys only: an event named "constructor" must not read the table's prototype.
    eventName = Object.hasOwn(metaStandardEvents, event.event)
      ? (metaStandardEvents[event.event] as string)
      : event.event;
  else if (event.type === 'page') eventName = 'PageView';
  else return `${event.type}_not_supported: the Conversions API takes track and page calls`;
  if (eventName.trim() === '') return 'no_event_name';

  const time = eventTime(outbound).getTime();
  // Stryker disable next-line ConditionalExpression,StringLiteral: eventTime never returns an invalid date: correctedTimestamp throws on a time it cannot read
  if (!Number.isFinite(time)) return 'invalid_time';
  if (now - time > META_MAX_AGE_MS) return 'too_old: the Conversions API refuses events more than 7 days old';
  const properties = payloadOf(event);
  const customData = customDataOf(properties, eventName);
  if (eventName === 'Purchase' && customData.value === undefined)
    return 'purchase_without_value: Meta requires value and currency on a Purchase';

  const url = pageFields(event).url;
  const userAgent = userAgentOf(outbound);
  const fbclid = clickIdOf(event, 'fbclid');
  const fbc = event.context?.clickId?.fbc ?? (fbclid ? `fb.1.${time}.${fbclid}` : undefined);
  const phone = personField(event, 'phone');
  const lower = (value: string | undefined) => value?.toLowerCase();
  const userData = defined({
    em: hashed(emailOrHashOf(event)),
    ph: hashed(phone ? metaPhone(phone) : undefined),
    fn: hashed(lower(personField(event, 'firstName', 'first_name'))),
    ln: hashed(lower(personField(event, 'lastName', 'last_name'))),
    external_id: hashed(userIdOf(event) ?? event.anonymousId ?? undefined),
    client_ip_address: receipt.ip ?? undefined,
    client_user_agent: userAgent,
    fbc,
    fbp: event.context?.clickId?.fbp,
  });
  return {
    event_name: eventName,
    event_time: Math.floor(Math.min(time, now) / 1000),
    event_id: event.messageId,
    action_source: url && userAgent ? 'website' : 'other',
    ...defined({ event_source_url: url }),
    user_data: userData,
    ...(Object.keys(customData).length > 0 ? { custom_data: customData } : {}),
  };
}

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
