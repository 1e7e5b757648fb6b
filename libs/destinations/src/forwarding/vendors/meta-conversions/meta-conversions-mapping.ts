import { defined, eventTime, pageFields, payloadOf, userAgentOf, userIdOf } from '../../event-fields';
import type { OutboundEvent } from '../../forwarder';
import { clickIdOf, emailOrHashOf, hashedOnce, personField } from '../../hashed-identity';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

/** Meta refuses events older than 7 days; a minute's margin for the time in flight. */
export const META_MAX_AGE_MS = 7 * 86_400_000 - 60_000;

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
