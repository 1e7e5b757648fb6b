import { correctedTimestamp, type TrackingEvent } from '@pipeline/events';
import type { OutboundEvent } from './outbound-event';

/** The event name of a page view at vendors without a page call of their own. */
export const PAGE_VIEWED = 'Page Viewed';
/** The event name of a mobile screen view (Segment's `screen`) at vendors without one. */
export const SCREEN_VIEWED = 'Screen Viewed';

/** A screen call's properties with its name as `name`, properties winning. */
export function screenFields(event: TrackingEvent): Record<string, unknown> {
  if (event.type !== 'screen') return {};
  return { ...(text(event.name) ? { name: event.name } : {}), ...(event.properties ?? {}) };
}

/** When the event happened, with the client's clock error corrected (docs/tracking-api.md#events). */
export function eventTime({ event, receipt }: OutboundEvent): Date {
  return correctedTimestamp(event.timestamp, event.sentAt ?? receipt.batchSentAt, receipt.receivedAt);
}

/** The user agent the server saw, else the one the client reported. */
export function userAgentOf({ event, receipt }: OutboundEvent): string | undefined {
  return receipt.userAgent ?? event.context?.userAgent ?? undefined;
}

/** The known user, if any: userId may be null or absent. */
export function userIdOf(event: TrackingEvent): string | undefined {
  return typeof event.userId === 'string' && event.userId.length > 0 ? event.userId : undefined;
}

/**
 * Properties (track, page, screen) or traits (identify, group) as a plain record; {} when
 * absent. By the call's type, not by which key it has: the door keeps keys the contract does
 * not name, so an identify may carry a stray `properties` that is not its traits.
 */
export function payloadOf(event: TrackingEvent): Record<string, unknown> {
  switch (event.type) {
    case 'identify':
    case 'group':
      return (event.traits ?? {}) as Record<string, unknown>;
    case 'alias':
      return {};
    default:
      return (event.properties ?? {}) as Record<string, unknown>;
  }
}

const text = (value: unknown): string | undefined =>
  typeof value === 'string' && value.length > 0 ? value : undefined;

/** What a page view was: the page call's name and the page context, properties winning. */
export function pageFields(event: TrackingEvent): Record<string, string> {
  const page = event.context?.page ?? {};
  const properties = event.type === 'page' ? payloadOf(event) : {};
  const fields: Record<string, string | undefined> = {
    name: event.type === 'page' ? text(event.name) : undefined,
    url: text(properties.url) ?? text(page.url),
    path: text(properties.path) ?? text(page.path),
    title: text(properties.title) ?? text(page.title),
    referrer: text(properties.referrer) ?? text(page.referrer),
  };
  return Object.fromEntries(Object.entries(fields).filter((entry): entry is [string, string] => !!entry[1]));
}

/** Drops undefined values, so payloads compare and serialize without them. */
export function defined<T extends Record<string, unknown>>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
