import type { EventContext, TrackingEvent } from './event-schema';
import { inEventTimeRange, parseEventTime } from './event-time';
import { tableForType, type WarehouseRow } from './warehouse-tables';

/** What the server knows about the request an event came in. */
export interface ReceiptContext {
  receivedAt: Date;
  /** The client address (see clientAddress). */
  ip: string | null;
  /** The request's User-Agent header. */
  userAgent: string | null;
  /** The batch's sentAt, used when the event has none of its own. */
  batchSentAt?: string;
}

const typedContextKeys = new Set([
  'source',
  'library',
  'session',
  'page',
  'screen',
  'campaign',
  'clickId',
  'consent',
  'browser',
  'os',
  'device',
  'language',
  'locale',
  'userAgent',
]);

const text = (value: unknown): string | null =>
  typeof value === 'string' && value.length > 0 ? value : null;
const int = (value: unknown): number | null => (Number.isInteger(value) ? (value as number) : null);
const object = (value: unknown): Record<string, unknown> | null =>
  value !== null && typeof value === 'object' && !Array.isArray(value) && Object.keys(value).length > 0
    ? (value as Record<string, unknown>)
    : null;

/** An event a consumer cannot turn into a row: it can only be dead-lettered. */
export class UnstorableEvent extends Error {
  override readonly name = 'UnstorableEvent';
}

function instantOf(text: unknown, field: string): number {
  const ms = parseEventTime(text);
  if (ms === undefined) throw new UnstorableEvent(`${field} is not an accepted date-time: ${String(text)}`);
  return ms;
}

/**
 * Clock correction (docs/tracking-api.md#events): the client's clock may be off, but the time between the event
 * and its sending is right, so timestamp = receivedAt - (sentAt - timestamp). A correction that
 * would leave the years 0001-9999 (a sentAt decades from the timestamp) is not applied.
 */
export function correctedTimestamp(timestamp: string, sentAt: string | undefined, receivedAt: Date): Date {
  const original = instantOf(timestamp, 'timestamp');
  if (!sentAt) return new Date(original);
  const sent = parseEventTime(sentAt);
  if (sent === undefined) return new Date(original);
  const corrected = receivedAt.getTime() - (sent - original);
  return new Date(inEventTimeRange(corrected) ? corrected : original);
}

function contextColumns(context: EventContext | undefined, receipt: ReceiptContext) {
  const c = context ?? {};
  const campaign = c.campaign ?? {};
  const extra = Object.fromEntries(Object.entries(c).filter(([key]) => !typedContextKeys.has(key)));
  return {
    context_source: text(c.source),
    context_library_name: text(c.library?.name),
    context_library_version: text(c.library?.version),
    context_page_url: text(c.page?.url),
    context_page_path: text(c.page?.path),
    context_page_title: text(c.page?.title),
    context_page_referrer: text(c.page?.referrer),
    context_screen_width: int(c.screen?.width),
    context_screen_height: int(c.screen?.height),
    context_campaign_source: text(campaign.utm_source ?? campaign.source),
    context_campaign_medium: text(campaign.utm_medium ?? campaign.medium),
    context_campaign_name: text(campaign.utm_campaign ?? campaign.name),
    context_campaign_term: text(campaign.utm_term ?? campaign.term),
    context_campaign_content: text(campaign.utm_content ?? campaign.content),
    context_click_ids: object(c.clickId),
    context_consent: object(c.consent),
    context_browser: text(c.browser),
    context_os: text(c.os),
    context_device: text(c.device),
    context_language: text(c.language),
    context_locale: text(c.locale),
    // The server's view wins: the header is what actually reached us.
    context_user_agent: receipt.userAgent ?? text(c.userAgent),
    context_ip: receipt.ip,
    context_extra: object(extra),
  };
}

/**
 * Routes a validated event to its table and maps it onto typed columns
 * (docs/delivery-and-destinations.md#warehouse-tables). Throws UnstorableEvent for a date-time
 * the validator would have refused (a record that did not come through the door).
 */
export function normalizeEvent(event: TrackingEvent, receipt: ReceiptContext): WarehouseRow {
  const sentAt = event.sentAt ?? receipt.batchSentAt;
  if (!inEventTimeRange(receipt.receivedAt.getTime()))
    throw new UnstorableEvent('receivedAt is not an accepted date-time');
  const common = {
    message_id: event.messageId,
    anonymous_id: text(event.anonymousId),
    user_id: text(event.userId),
    session_id: text(event.sessionId ?? event.context?.session?.id),
    timestamp: correctedTimestamp(event.timestamp, sentAt, receipt.receivedAt).toISOString(),
    original_timestamp: new Date(instantOf(event.timestamp, 'timestamp')).toISOString(),
    sent_at: sentAt ? new Date(instantOf(sentAt, 'sentAt')).toISOString() : null,
    received_at: receipt.receivedAt.toISOString(),
    ...contextColumns(event.context, receipt),
    // The warehouse consumer sets it from the envelope's verdict (plan-decisions.ts).
    plan_violations: null,
  };
  switch (event.type) {
    case 'track':
      return {
        table: tableForType.track,
        row: { ...common, type: 'track', event: event.event, name: null, properties: event.properties ?? {} },
      };
    case 'page':
    case 'screen':
      return {
        table: tableForType[event.type],
        row: {
          ...common,
          type: event.type,
          event: null,
          name: text(event.name),
          properties: event.properties ?? {},
        },
      };
    case 'identify':
      return { table: tableForType.identify, row: { ...common, traits: event.traits ?? {} } };
    case 'group':
      return {
        table: tableForType.group,
        row: { ...common, group_id: event.groupId, traits: event.traits ?? {} },
      };
    case 'alias':
      return { table: tableForType.alias, row: { ...common, previous_id: event.previousId } };
  }
}
