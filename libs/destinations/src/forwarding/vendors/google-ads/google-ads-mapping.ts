import type { ResolvedDestination } from '@pipeline/tenancy';
import { InvalidConfig } from '../../destination-settings';
import { defined, eventTime, payloadOf } from '../../event-fields';
import type { OutboundEvent } from '../../forwarder';
import { clickIdOf, emailOrHashOf, hashedOnce, personField, sha256Hex } from '../../hashed-identity';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

export type ClickConversion = Record<string, unknown> & {
  conversionAction: string;
  conversionDateTime: string;
};

/** Google's normalisation of an email before hashing. */
export function googleEmail(email: string): string {
  // split() returns at least one part: the local part is always there.
  const [local, domain = ''] = email.trim().toLowerCase().split('@') as [string, string?];
  const gmail = domain === 'gmail.com' || domain === 'googlemail.com';
  return `${gmail ? local.replace(/\./g, '') : local}@${domain}`;
}

/** `yyyy-mm-dd hh:mm:ss+00:00`, in UTC. */
export function googleDateTime(time: Date): string {
  return `${time.toISOString().slice(0, 19).replace('T', ' ')}+00:00`;
}

const numberOf = (value: unknown): number | undefined => {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value.trim())) return Number(value);
  return undefined;
};

/** The conversion action ids by event name, from the integration's config or the app's. */
export function conversionActionsOf(destination: ResolvedDestination): Map<string, string> {
  const fromIntegration = destination.config.global.conversionActions;
  const source = fromIntegration ?? destination.appConfig.conversionActions;
  if (source === undefined || source === null)
    throw new InvalidConfig('appConfig.conversionActions is required');
  if (typeof source !== 'object' || Array.isArray(source))
    throw new InvalidConfig('conversionActions must map event names to conversion action ids');
  const actions = new Map<string, string>();
  for (const [name, id] of Object.entries(source as Record<string, unknown>)) {
    const text = typeof id === 'number' ? String(id) : id;
    if (typeof text !== 'string' || !/^\d{1,20}$/.test(text))
      throw new InvalidConfig(`conversionActions["${name}"] must be a numeric conversion action id`);
    actions.set(name, text);
  }
  return actions;
}

/** Our event as a click conversion, or the reason it has none. */
export function clickConversionOf(
  outbound: OutboundEvent,
  customerId: string,
  actions: ReadonlyMap<string, string>,
  now: number = Date.now(),
): ClickConversion | string {
  const { event } = outbound;
  // Stryker disable next-line ConditionalExpression,StringLiteral: eventTime never returns an invalid date: correctedTimestamp throws on a time it cannot read
  if (Number.isNaN(eventTime(outbound).getTime())) return 'invalid_time';
  if (event.type !== 'track') return `${event.type}_not_supported: Google Ads conversions are track calls`;
  const actionId = actions.get(event.event);
  if (actionId === undefined) return 'no_conversion_action: no conversion action is mapped to this event';
  const clickId = (['gclid', 'gbraid', 'wbraid'] as const)
    .map((name) => [name, clickIdOf(event, name)] as const)
    .find(([, value]) => value !== undefined);
  const email = emailOrHashOf(event);
  const phone = personField(event, 'phone');
  const e164 =
    phone && /^\+[1-9]\d{6,14}$/.test(phone.replace(/[\s()-]/g, ''))
      ? phone.replace(/[\s()-]/g, '')
      : undefined;
  if (!clickId && !email)
    return 'no_click_id: a Google Ads conversion needs a gclid, gbraid or wbraid, or an email';
  const properties = payloadOf(event);
  const value = numberOf(properties.value) ?? numberOf(properties.revenue) ?? numberOf(properties.total);
  // Stryker disable next-line StringLiteral: any text but a currency code is refused by the ISO 4217 check below
  const currency = typeof properties.currency === 'string' ? properties.currency.trim().toUpperCase() : '';
  const orderId = [properties.order_id, properties.orderId].find((v) => typeof v === 'string' && v !== '') as
    string | undefined;
  const dedupeId = orderId ?? event.messageId;
  const identifiers = clickId
    ? undefined
    : [
        // Stryker disable next-line ArrayDeclaration: without a click id there is an email (no_click_id returned above)
        ...(email ? [{ hashedEmail: hashedOnce(email.includes('@') ? googleEmail(email) : email) }] : []),
        ...(e164 ? [{ hashedPhoneNumber: sha256Hex(e164) }] : []),
      ];
  return {
    ...(clickId ? { [clickId[0]]: clickId[1] } : {}),
    ...(identifiers ? { userIdentifiers: identifiers } : {}),
    conversionAction: `customers/${customerId}/conversionActions/${actionId}`,
    // A time ahead of ours (a client clock we could not correct) is sent as now.
    conversionDateTime: googleDateTime(new Date(Math.min(eventTime(outbound).getTime(), now))),
    ...defined({
      conversionValue: value,
      currencyCode: value !== undefined && /^[A-Z]{3}$/.test(currency) ? currency : undefined,
    }),
    orderId: dedupeId.length <= 64 ? dedupeId : sha256Hex(dedupeId),
    // GRANTED only when the user said so: an event that does not mention consent is sent
    // only because our gate lets it through by default, which is not a grant Google can rely on.
    ...(event.context?.consent?.marketing === true ? { consent: { adUserData: 'GRANTED' as const } } : {}),
  };
}
