import { createHash } from 'node:crypto';
import type { TrackingEvent } from '@pipeline/events';
import { payloadOf } from './event-fields';

// What the advertising and CRM clients (HubSpot, Meta, Google Ads) know about a person, and
// the normalisation and SHA-256 hashing the ad platforms match on.

// update() reads a string as UTF-8.
export const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A value already hashed (64 lowercase hex digits) is sent as it is, not hashed twice. */
export const hashedOnce = (normalized: string) =>
  SHA256_HEX.test(normalized) ? normalized : sha256Hex(normalized);

/**
 * A plausible address: one @, something before, a dot in the domain, no spaces. Mailbox
 * syntax is wider, but the vendors refuse most of what this refuses.
 */
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** The address trimmed and lowercased, or undefined when it is not one. */
export function normalizedEmail(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const email = value.trim().toLowerCase();
  return EMAIL.test(email) ? email : undefined;
}

/** The person's traits: an identify's own, else those a client attached as `context.traits`. */
export function traitsOf(event: TrackingEvent): Record<string, unknown> {
  if (event.type === 'identify') return payloadOf(event);
  const traits = (event.context as Record<string, unknown> | undefined)?.traits;
  return traits !== null && typeof traits === 'object' && !Array.isArray(traits)
    ? (traits as Record<string, unknown>)
    : {};
}

/** The first text value of `fields` found in the event's properties, then in its traits. */
export function personField(event: TrackingEvent, ...fields: string[]): string | undefined {
  // An identify's payload is its traits: they are looked at twice, to the same effect.
  for (const source of [payloadOf(event), traitsOf(event)]) {
    for (const field of fields) {
      const value = Object.hasOwn(source, field) ? source[field] : undefined;
      if (typeof value === 'string' && value.trim() !== '') return value.trim();
    }
  }
  return undefined;
}

/** The event's email, normalised, from its properties or traits; undefined when none is valid. */
export const emailOf = (event: TrackingEvent) => normalizedEmail(personField(event, 'email'));

/**
 * The email to hash: normalised, or an address the client already hashed (64 hex digits,
 * lowercased), which is sent as it is.
 */
export function emailOrHashOf(event: TrackingEvent): string | undefined {
  const value = personField(event, 'email');
  if (value && /^[0-9a-f]{64}$/i.test(value)) return value.toLowerCase();
  return normalizedEmail(value);
}

/** A click id the client captured (`context.clickId.<name>`), else the page URL's query parameter. */
export function clickIdOf(event: TrackingEvent, name: string): string | undefined {
  const captured = event.context?.clickId?.[name];
  if (typeof captured === 'string' && captured !== '') return captured;
  const fromProperties = payloadOf(event)[name];
  if (typeof fromProperties === 'string' && fromProperties !== '') return fromProperties;
  const url = event.context?.page?.url;
  // Stryker disable next-line ConditionalExpression: new URL() of undefined throws, and the catch answers undefined too
  if (typeof url !== 'string') return undefined;
  try {
    return new URL(url).searchParams.get(name) || undefined;
  } catch {
    // A page URL the client sent that does not parse has no click id.
  }
  return undefined;
}
