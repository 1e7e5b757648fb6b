import { uuidOf } from '../../dedupe-keys';
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

/** OneSignal takes at most 100 property updates per request. */
const MAX_TAGS = 100;

export type OneSignalCustomEvent = Record<string, unknown> & {
  name: string;
  external_id: string;
  idempotency_key: string;
};

export interface OneSignalUserUpdate {
  externalId: string;
  body: { properties: Record<string, unknown> };
}

export type OneSignalItem =
  | { endpoint: 'custom_events'; event: OneSignalCustomEvent }
  | { endpoint: 'update_user'; update: OneSignalUserUpdate };

/** Tags are flat strings: numbers and booleans become strings, nested values are left out. */
export function tagsOf(traits: Record<string, unknown>): Record<string, string> {
  // Null prototype: a trait named `__proto__` is a tag like any other.
  const tags: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [key, value] of Object.entries(traits)) {
    if (Object.keys(tags).length >= MAX_TAGS) break;
    if (typeof value === 'string') tags[key] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') tags[key] = String(value);
  }
  return tags;
}

/** OneSignal wants ISO 639-1, lowercase: "en-US" is "en". */
function languageOf(value: unknown): string | undefined {
  return typeof value === 'string' && /^[a-z]{2}([-_].*)?$/i.test(value)
    ? value.slice(0, 2).toLowerCase()
    : undefined;
}

/** Our event as a OneSignal custom event or user update, or the reason it has none. */
export function oneSignalItemOf(outbound: OutboundEvent): OneSignalItem | string {
  const { event } = outbound;
  const userId = userIdOf(event);
  if (!userId) return 'anonymous: OneSignal events and tags need the user’s external_id';
  const common = {
    external_id: userId,
    timestamp: eventTime(outbound).toISOString(),
    idempotency_key: uuidOf(event.messageId),
  };
  switch (event.type) {
    case 'track':
      return {
        endpoint: 'custom_events',
        event: { ...common, name: event.event, properties: event.properties ?? {} },
      };
    case 'page':
      return {
        endpoint: 'custom_events',
        event: {
          ...common,
          name: PAGE_VIEWED,
          properties: { ...pageFields(event), ...(event.properties ?? {}) },
        },
      };
    case 'screen':
      return {
        endpoint: 'custom_events',
        event: { ...common, name: SCREEN_VIEWED, properties: screenFields(event) },
      };
    case 'identify': {
      const traits = payloadOf(event);
      const { language: _language, ...rest } = traits;
      const properties = defined({
        tags: tagsOf(rest),
        language: languageOf(traits.language) ?? languageOf(event.context?.language ?? event.context?.locale),
      });
      return { endpoint: 'update_user', update: { externalId: userId, body: { properties } } };
    }
    case 'group':
      return 'group_not_supported: OneSignal has no group or account entity';
    case 'alias':
      return 'alias_not_supported: OneSignal aliases are set on its identity API, one user at a time';
  }
}
