import type { TrackEvent } from '@pipeline/events';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { httpUrl, InvalidConfig, optionalText, requiredText } from '../../destination-settings';
import {
  defined,
  eventTime,
  PAGE_VIEWED,
  pageFields,
  payloadOf,
  SCREEN_VIEWED,
  screenFields,
  userIdOf,
} from '../../event-fields';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';

/** Which array of the /users/track body an object goes to. */
export type BrazeArray = 'attributes' | 'events' | 'purchases';

export interface BrazeObject {
  array: BrazeArray;
  object: Record<string, unknown>;
}

/**
 * 75 objects per request: the legacy limit was 75 of each kind, newer docs say 75 combined,
 * so combined. Braze documents no byte limit; 4 MB keeps requests reasonable.
 */
const limits = { maxItems: 75, maxBodyBytes: 4 * 1024 * 1024 };

/** The cluster hosts Braze lists (rest.iad-01.braze.com, rest.fra-01.braze.eu, ...). */
const BRAZE_HOST = /^https:\/\/rest\.[a-z0-9-]+\.braze\.(com|eu)$/;

/** Segment-style trait names and Braze's standard attributes they set. */
const standardAttributes: Record<string, string> = {
  email: 'email',
  firstName: 'first_name',
  first_name: 'first_name',
  lastName: 'last_name',
  last_name: 'last_name',
  phone: 'phone',
  gender: 'gender',
  birthday: 'dob',
  city: 'home_city',
  country: 'country',
  language: 'language',
};

/**
 * Traits as Braze attributes. Own properties only, on both sides: a trait named `constructor`
 * or `toString` must not read the table's prototype, and one named `__proto__` must be
 * carried as an attribute, not set the object's prototype (a null-prototype record).
 */
export function attributesOf(traits: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [key, value] of Object.entries(traits)) {
    const standard = Object.hasOwn(standardAttributes, key) ? standardAttributes[key] : undefined;
    if (standard === 'dob' && typeof value === 'string') out.dob = value.slice(0, 10);
    else out[standard ?? key] = value;
  }
  return out;
}

/** The purchases of an "Order Completed" with products that have an id and a price. */
function purchasesOf(event: TrackEvent, time: string, identity: Record<string, unknown>, appId?: string) {
  const properties = payloadOf(event);
  if (event.event !== 'Order Completed' || !Array.isArray(properties.products)) return [];
  const currency = (typeof properties.currency === 'string' ? properties.currency : 'USD').toUpperCase();
  const purchases: Record<string, unknown>[] = [];
  for (const product of properties.products as unknown[]) {
    // Stryker disable next-line ConditionalExpression: a string, number or boolean destructures to no id either
    if (product === null || typeof product !== 'object') continue;
    const { product_id, sku, id, price, quantity, ...rest } = product as Record<string, unknown>;
    const productId = [product_id, sku, id].find((v) => typeof v === 'string' && v.length > 0);
    const amount = Number(price);
    if (typeof productId !== 'string' || !Number.isFinite(amount)) continue;
    purchases.push({
      ...identity,
      ...defined({ app_id: appId }),
      product_id: productId,
      currency,
      price: amount,
      quantity: Number.isInteger(quantity) ? quantity : 1,
      time,
      properties: rest,
    });
  }
  return purchases;
}

export interface BrazeMapping {
  /** Braze's app identifier, sent with events and purchases (appConfig.appId). */
  appId?: string;
  /** Send anonymous visitors as alias-only profiles (integration config global.anonymousProfiles). */
  anonymousProfiles: boolean;
}

/** Our event as Braze objects, or the reason it has none. */
export function brazeObjectsOf(outbound: OutboundEvent, mapping: BrazeMapping): BrazeObject[] | string {
  const { event } = outbound;
  const userId = userIdOf(event);
  if (!userId && !mapping.anonymousProfiles) {
    return 'anonymous: Braze bills each alias-only profile; enable config.global.anonymousProfiles to send them';
  }
  // An alias-only profile is created only when _update_existing_only is false.
  const identity = userId
    ? { external_id: userId }
    : {
        user_alias: { alias_name: event.anonymousId, alias_label: 'anonymous_id' },
        _update_existing_only: false,
      };
  const time = eventTime(outbound).toISOString();
  const app = defined({ app_id: mapping.appId });
  switch (event.type) {
    case 'track': {
      const purchases = purchasesOf(event, time, identity, mapping.appId);
      if (purchases.length > 0) return purchases.map((object) => ({ array: 'purchases', object }));
      return [
        {
          array: 'events',
          object: { ...identity, ...app, name: event.event, time, properties: event.properties ?? {} },
        },
      ];
    }
    case 'page':
      return [
        {
          array: 'events',
          object: {
            ...identity,
            ...app,
            name: PAGE_VIEWED,
            time,
            properties: { ...pageFields(event), ...(event.properties ?? {}) },
          },
        },
      ];
    case 'screen':
      return [
        {
          array: 'events',
          object: {
            ...identity,
            ...app,
            name: SCREEN_VIEWED,
            time,
            properties: screenFields(event),
          },
        },
      ];
    case 'identify':
      // The identifier last: a trait named external_id must not move the update to another user.
      return [{ array: 'attributes', object: { ...attributesOf(event.traits ?? {}), ...identity } }];
    case 'group':
      return 'group_not_supported: Braze has no group or account entity';
    case 'alias':
      return 'alias_not_supported: merging profiles is Braze’s /users/identify, not /users/track';
  }
}

function bodyOf(items: readonly BrazeObject[]) {
  const body: Partial<Record<BrazeArray, Record<string, unknown>[]>> = {};
  for (const item of items) (body[item.array] ??= []).push(item.object);
  return body;
}

/** Braze's X-RateLimit-Reset is the epoch second the window resets. */
function untilRateLimitReset(response: VendorResponse): number | undefined {
  const reset = Number(response.headers.get('x-ratelimit-reset'));
  return Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - Date.now()) : undefined;
}

/**
 * Braze answers "success" with non-fatal `errors` for objects it did not process; the others
 * were processed. An error that names no object cannot be traced, so the request counts as
 * delivered: sending it again would duplicate everything else (Braze does not deduplicate).
 */
function verdictOf(response: VendorResponse, items: readonly BrazeObject[]): Verdict {
  const policy = { fatalStatuses: [401, 403, 404], retryAfterFallback: untilRateLimitReset };
  if (response.status < 200 || response.status >= 300) {
    return { kind: 'failed', failure: failureOfStatus(response, policy) };
  }
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (body.message !== 'success' && body.message !== 'queued') {
    return { kind: 'failed', failure: { reason: `fatal: ${String(body.message)}`, retryable: false } };
  }
  if (!Array.isArray(body.errors)) return { kind: 'accepted' };
  // Positions in each array of the body, back to positions in the request.
  const positions: Record<BrazeArray, number[]> = { attributes: [], events: [], purchases: [] };
  items.forEach((item, index) => positions[item.array].push(index));
  const rejected: ItemRejection[] = [];
  for (const error of body.errors as Record<string, unknown>[]) {
    const array = error.input_array;
    if (array !== 'attributes' && array !== 'events' && array !== 'purchases') continue;
    const index = Number.isInteger(error.index) ? positions[array][error.index as number] : undefined;
    if (index === undefined) continue;
    rejected.push({ index, reason: `rejected: ${String(error.type ?? 'invalid object')}`, retryable: false });
  }
  return { kind: 'accepted', rejected };
}

/** Braze `POST /users/track`. */
export class BrazeForwarder implements Forwarder {
  readonly appType = 'braze';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
      const restEndpoint = httpUrl(
        requiredText(destination.appConfig, 'restEndpoint', 'appConfig'),
        'appConfig.restEndpoint',
        { httpsOnly: true },
      );
      // The key travels to this host: only Braze's own hosts are taken from a tenant's config.
      if (!BRAZE_HOST.test(restEndpoint)) {
        throw new InvalidConfig(
          'appConfig.restEndpoint must be a Braze REST endpoint (https://rest.<cluster>.braze.com)',
        );
      }
      const baseUrl = this.client.baseUrl ?? restEndpoint;
      const mapping: BrazeMapping = {
        appId: optionalText(destination.appConfig, 'appId', 'appConfig'),
        anonymousProfiles: destination.config.global.anonymousProfiles === true,
      };
      const endpoint: Endpoint<BrazeObject> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ attributes: [], events: [], purchases: [] })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/users/track`,
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
          body: JSON.stringify(bodyOf(items)),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => brazeObjectsOf(outbound, mapping));
      await ledger.deliver(endpoint, mapped);
    });
  }
}
