import type { WarehouseTableName } from '@pipeline/destinations';

// A warehouse row back into the event the tracking API received (docs/tracking-plans.md,
// "Plans from traffic"), the one place that knows how: a plan is a schema of the whole event as
// received, so a preview must hold stored rows to it in that shape. It inverts
// libs/events event-normalizer.ts: typed context columns go back to their context members and
// context_extra's members come back as they were.

/** An event as the tracking API received it, rebuilt from a stored row. */
export type StoredEvent = Record<string, unknown>;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A stored time (a Date, or ISO text from to_jsonb) as the ISO text an event carries. */
function timeText(value: unknown): string | undefined {
  if (value === null || value === undefined) return undefined;
  const date = value instanceof Date ? value : new Date(String(value));
  return Number.isNaN(date.getTime()) ? String(value) : date.toISOString();
}

/** The members whose value is not null, as an object; undefined when none is. */
function present(entries: [string, unknown][]): Record<string, unknown> | undefined {
  const kept = entries.filter(([, value]) => value !== null && value !== undefined);
  // fromEntries defines members: a key "__proto__" is data, never the prototype.
  return kept.length === 0 ? undefined : Object.fromEntries(kept);
}

/** The event's context from the typed columns, then context_extra's members as they came. */
export function contextOfRow(row: Readonly<Record<string, unknown>>): Record<string, unknown> | undefined {
  const extra = isRecord(row.context_extra) ? Object.entries(row.context_extra) : [];
  const typed: [string, unknown][] = [
    ['source', row.context_source],
    [
      'library',
      present([
        ['name', row.context_library_name],
        ['version', row.context_library_version],
      ]),
    ],
    ['session', present([['id', row.session_id]])],
    [
      'page',
      present([
        ['url', row.context_page_url],
        ['path', row.context_page_path],
        ['title', row.context_page_title],
        ['referrer', row.context_page_referrer],
      ]),
    ],
    [
      'screen',
      present([
        ['width', row.context_screen_width],
        ['height', row.context_screen_height],
      ]),
    ],
    // The columns keep the value, not whether it came as utm_source or source: Segment's
    // spelling (source, medium, name, term, content) is the one given back.
    [
      'campaign',
      present([
        ['source', row.context_campaign_source],
        ['medium', row.context_campaign_medium],
        ['name', row.context_campaign_name],
        ['term', row.context_campaign_term],
        ['content', row.context_campaign_content],
      ]),
    ],
    ['clickId', row.context_click_ids],
    ['consent', row.context_consent],
    ['browser', row.context_browser],
    ['os', row.context_os],
    ['device', row.context_device],
    ['language', row.context_language],
    ['locale', row.context_locale],
    ['userAgent', row.context_user_agent],
    ['ip', row.context_ip],
  ];
  // context_extra holds no typed key, so nothing is overwritten; an ip the client sent itself
  // is in it (the column holds the address the request came from) and wins, as received. Its
  // members come back as sent, a null one included.
  const context = Object.fromEntries([
    ...typed.filter(([, value]) => value !== null && value !== undefined),
    ...extra,
  ]);
  return Object.keys(context).length === 0 ? undefined : context;
}

const typeOfRow = (table: WarehouseTableName, row: Readonly<Record<string, unknown>>): string =>
  table === 'events'
    ? String(row.type)
    : ({ users: 'identify', groups: 'group', aliases: 'alias' } as const)[table];

/**
 * The event a row of `table` was stored from: type, messageId, ids, times (the client's
 * timestamp as sent, before clock correction), event or name, properties or traits, groupId or
 * previousId, and the context. Members stored as null are absent, as they were at the door.
 */
export function eventOfRow(table: WarehouseTableName, row: Readonly<Record<string, unknown>>): StoredEvent {
  const type = typeOfRow(table, row);
  const body: [string, unknown][] = [];
  if (type === 'track') body.push(['event', row.event]);
  if (type === 'page' || type === 'screen') body.push(['name', row.name]);
  if (table === 'events') body.push(['properties', isRecord(row.properties) ? row.properties : {}]);
  if (table === 'users' || table === 'groups') body.push(['traits', isRecord(row.traits) ? row.traits : {}]);
  if (table === 'groups') body.push(['groupId', row.group_id]);
  if (table === 'aliases') body.push(['previousId', row.previous_id]);
  return (
    present([
      ['type', type],
      ['messageId', row.message_id],
      ['anonymousId', row.anonymous_id],
      ['userId', row.user_id],
      ['timestamp', timeText(row.original_timestamp ?? row.timestamp)],
      ['sentAt', timeText(row.sent_at)],
      ...body,
      ['context', contextOfRow(row)],
    ]) ?? {}
  );
}

/** The rule name a stored event answers to: track's event, page's and screen's name, else none. */
export function callNameOf(event: StoredEvent): string | null {
  if (event.type === 'track') return typeof event.event === 'string' ? event.event : null;
  if (event.type === 'page' || event.type === 'screen')
    return typeof event.name === 'string' ? event.name : null;
  return null;
}
