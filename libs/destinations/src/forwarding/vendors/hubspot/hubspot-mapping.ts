import type { OutboundEvent } from '../../forwarder';
import { normalizedEmail } from '../../hashed-identity';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

/** HubSpot's longest property value. */
export const HUBSPOT_MAX_VALUE_CHARS = 65_536;

export interface HubSpotInput {
  idProperty: 'email';
  id: string;
  properties: Record<string, string>;
}

/** Segment-style trait names and the HubSpot contact properties they set. */
const standardProperties: Record<string, string> = {
  email: 'email',
  firstName: 'firstname',
  first_name: 'firstname',
  lastName: 'lastname',
  last_name: 'lastname',
  title: 'jobtitle',
  postalCode: 'zip',
  postal_code: 'zip',
  zip: 'zip',
};

const addressProperties: Record<string, string> = {
  street: 'address',
  city: 'city',
  state: 'state',
  postalCode: 'zip',
  postal_code: 'zip',
  country: 'country',
};

/** A trait's HubSpot property name, or undefined when none can be made of it. */
export function hubspotPropertyName(trait: string): string | undefined {
  if (Object.hasOwn(standardProperties, trait)) return standardProperties[trait];
  const name = trait
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, '_')
    .replace(/_+/g, '_')
    .replace(/^_|_$/g, '');
  return /^[a-z]/.test(name) ? name : undefined;
}

/** A trait value as HubSpot property text, or undefined when it has none. */
export function hubspotValue(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  let text: string;
  if (typeof value === 'string') text = value;
  else if (typeof value === 'number') {
    if (!Number.isFinite(value)) return undefined;
    text = String(value);
  } else if (Array.isArray(value) && value.every((v) => ['string', 'number', 'boolean'].includes(typeof v)))
    text = value.map(String).join(';');
  // Booleans as well: JSON writes them as true and false.
  else text = JSON.stringify(value);
  return text.length <= HUBSPOT_MAX_VALUE_CHARS ? text : undefined;
}

/** Traits as property name → raw value, before the account's properties are known. */
export function hubspotPropertiesOf(traits: Record<string, unknown>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const [key, value] of Object.entries(traits)) {
    if (key === 'address' && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [part, partValue] of Object.entries(value as Record<string, unknown>)) {
        const name = Object.hasOwn(addressProperties, part) ? addressProperties[part] : undefined;
        if (name) out.set(name, partValue);
      }
      continue;
    }
    const name = hubspotPropertyName(key);
    if (name) out.set(name, value);
  }
  return out;
}

/** A contact property the account defines: its type decides how dates are written. */
export type PropertyTypes = ReadonlyMap<string, string>;

/** An identify's contact upsert, or the reason it has none. `properties` not yet filtered. */
export function hubspotContactOf(
  outbound: OutboundEvent,
): { email: string; raw: Map<string, unknown> } | string {
  const { event } = outbound;
  if (event.type !== 'identify')
    return `identify_only: HubSpot contacts are updated from identify calls, not ${event.type}`;
  const traits = (event.traits ?? {}) as Record<string, unknown>;
  const email = normalizedEmail(traits.email);
  if (!email) return 'no_email: HubSpot contacts are upserted by email and this identify has no valid one';
  return { email, raw: hubspotPropertiesOf(traits) };
}

/** The input sent for a contact: only the account's writable properties, formatted by type. */
export function hubspotInputOf(email: string, raw: Map<string, unknown>, types: PropertyTypes): HubSpotInput {
  const properties: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, value] of raw) {
    const type = types.get(name);
    if (type === undefined) continue;
    let text = hubspotValue(value);
    // Stryker disable next-line ConditionalExpression: no text parses to no year, which is left out as well
    if (text !== undefined && type === 'date') {
      const time = new Date(Date.parse(text));
      // Years 0-9999 only: HubSpot reads YYYY-MM-DD, not the expanded years ISO 8601 allows.
      const year = time.getUTCFullYear();
      text = year >= 0 && year <= 9999 ? time.toISOString().slice(0, 10) : undefined;
    }
    if (text !== undefined) properties[name] = text;
  }
  // The contact's id, in place of whatever an email trait held.
  properties.email = email;
  return { idProperty: 'email', id: email, properties: { ...properties } };
}
