/**
 * The warehouse tables of tracked events (docs/delivery-and-destinations.md#warehouse-tables),
 * defined once: the row types here, and the DDL of the warehouse loader, come from these
 * column lists.
 */
export type ColumnType = 'text' | 'integer' | 'timestamptz' | 'jsonb';

/** Typed columns every table has: who, when, and the normalized context. */
const commonColumns = {
  message_id: 'text',
  anonymous_id: 'text',
  user_id: 'text',
  session_id: 'text',
  timestamp: 'timestamptz',
  original_timestamp: 'timestamptz',
  sent_at: 'timestamptz',
  received_at: 'timestamptz',
  context_source: 'text',
  context_library_name: 'text',
  context_library_version: 'text',
  context_page_url: 'text',
  context_page_path: 'text',
  context_page_title: 'text',
  context_page_referrer: 'text',
  context_screen_width: 'integer',
  context_screen_height: 'integer',
  context_campaign_source: 'text',
  context_campaign_medium: 'text',
  context_campaign_name: 'text',
  context_campaign_term: 'text',
  context_campaign_content: 'text',
  context_click_ids: 'jsonb',
  context_consent: 'jsonb',
  context_browser: 'text',
  context_os: 'text',
  context_device: 'text',
  context_language: 'text',
  context_locale: 'text',
  context_user_agent: 'text',
  context_ip: 'text',
  /** Context keys without a typed column. */
  context_extra: 'jsonb',
} as const satisfies Record<string, ColumnType>;

/**
 * Last in every table (a column added later goes last in a table that exists): what the event
 * was held to when its write key binds a tracking plan, and what was done about it; null when no
 * plan is bound or the event keeps to it (docs/tracking-plans.md, "Enforcement").
 */
const planColumns = { plan_violations: 'jsonb' } as const satisfies Record<string, ColumnType>;

export const warehouseTables = {
  /** track, page and screen */
  events: {
    ...commonColumns,
    type: 'text',
    event: 'text',
    name: 'text',
    properties: 'jsonb',
    ...planColumns,
  },
  /** identify; upserted on user_id with traits merged */
  users: { ...commonColumns, traits: 'jsonb', ...planColumns },
  /** group; upserted on group_id with traits merged */
  groups: { ...commonColumns, group_id: 'text', traits: 'jsonb', ...planColumns },
  aliases: { ...commonColumns, previous_id: 'text', ...planColumns },
} as const satisfies Record<string, Record<string, ColumnType>>;

export type WarehouseTable = keyof typeof warehouseTables;

type ValueOf<T extends ColumnType> = T extends 'integer'
  ? number
  : T extends 'jsonb'
    ? Record<string, unknown>
    : string;

export type RowOf<Table extends WarehouseTable> = {
  [Column in keyof (typeof warehouseTables)[Table]]: ValueOf<
    (typeof warehouseTables)[Table][Column] & ColumnType
  > | null;
};

export type WarehouseRow =
  | { table: 'events'; row: RowOf<'events'> }
  | { table: 'users'; row: RowOf<'users'> }
  | { table: 'groups'; row: RowOf<'groups'> }
  | { table: 'aliases'; row: RowOf<'aliases'> };

export const tableForType = {
  track: 'events',
  page: 'events',
  screen: 'events',
  identify: 'users',
  group: 'groups',
  alias: 'aliases',
} as const;
