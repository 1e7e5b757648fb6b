import type { TrackEvent } from '@pipeline/events';
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
import type { OutboundEvent } from '../../forwarder';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

/** Which array of the /users/track body an object goes to. */
export type BrazeArray = 'attributes' | 'events' | 'purchases';

export interface BrazeObject {
  array: BrazeArray;
  object: Record<string, unknown>;
}

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
