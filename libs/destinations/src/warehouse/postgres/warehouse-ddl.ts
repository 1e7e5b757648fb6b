import type { WarehouseTable } from '@pipeline/events';

export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Rows of users and groups are one per id (upserted); events and aliases one per message. */
export const conflictKey: Record<WarehouseTable, string> = {
  events: 'message_id',
  aliases: 'message_id',
  users: 'user_id',
  groups: 'group_id',
};

type Columns = readonly (readonly [name: string, type: string])[];

/**
 * Columns of users and groups that no event fills: which event each value came from, so that a
 * late (older) event never overwrites a newer one, in whatever order events arrive.
 * `_event_order` is the ordering key (event-order.ts) of the event whose columns the row has;
 * `_trait_orders` maps each trait key to the ordering key of the event that set its value.
 * Keys compare byte by byte (COLLATE "C"), as the loader compares them.
 */
export const orderColumns = {
  users: { _event_order: 'text COLLATE "C"', _trait_orders: 'jsonb' },
  groups: { _event_order: 'text COLLATE "C"', _trait_orders: 'jsonb' },
} as const satisfies Partial<Record<WarehouseTable, Readonly<Record<string, string>>>>;

/**
 * The columns every table had when migration 1 shipped, frozen: migration 1 must create the
 * same tables forever, whatever `warehouseTables` (@pipeline/events) says later.
 */
const v1Common: Columns = [
  ['message_id', 'text'],
  ['anonymous_id', 'text'],
  ['user_id', 'text'],
  ['session_id', 'text'],
  ['timestamp', 'timestamptz'],
  ['original_timestamp', 'timestamptz'],
  ['sent_at', 'timestamptz'],
  ['received_at', 'timestamptz'],
  ['context_source', 'text'],
  ['context_library_name', 'text'],
  ['context_library_version', 'text'],
  ['context_page_url', 'text'],
  ['context_page_path', 'text'],
  ['context_page_title', 'text'],
  ['context_page_referrer', 'text'],
  ['context_screen_width', 'integer'],
  ['context_screen_height', 'integer'],
  ['context_campaign_source', 'text'],
  ['context_campaign_medium', 'text'],
  ['context_campaign_name', 'text'],
  ['context_campaign_term', 'text'],
  ['context_campaign_content', 'text'],
  ['context_click_ids', 'jsonb'],
  ['context_consent', 'jsonb'],
  ['context_browser', 'text'],
  ['context_os', 'text'],
  ['context_device', 'text'],
  ['context_language', 'text'],
  ['context_locale', 'text'],
  ['context_user_agent', 'text'],
  ['context_ip', 'text'],
  ['context_extra', 'jsonb'],
];

/** Migration 1's tables, in the order it creates them: columns and primary key, frozen. */
const v1Tables: readonly { table: string; key: string; columns: Columns }[] = [
  {
    table: 'events',
    key: 'message_id',
    columns: [...v1Common, ['type', 'text'], ['event', 'text'], ['name', 'text'], ['properties', 'jsonb']],
  },
  { table: 'users', key: 'user_id', columns: [...v1Common, ['traits', 'jsonb']] },
  { table: 'groups', key: 'group_id', columns: [...v1Common, ['group_id', 'text'], ['traits', 'jsonb']] },
  { table: 'aliases', key: 'message_id', columns: [...v1Common, ['previous_id', 'text']] },
];

function createTable(schema: string, table: string, key: string, columns: Columns): string {
  const list = columns.map(
    ([name, type]) => `${quoteIdent(name)} ${type}${name === key ? ' PRIMARY KEY' : ''}`,
  );
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${quoteIdent(table)} (${list.join(', ')})`;
}

/**
 * A later migration's statement adding columns (`ADD COLUMN IF NOT EXISTS`, so a step re-run
 * after a crash between its statements and its record does no harm).
 */
export function addColumns(schema: string, table: string, columns: Columns): string {
  const adds = columns.map(([name, type]) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(name)} ${type}`);
  return `ALTER TABLE ${quoteIdent(schema)}.${quoteIdent(table)} ${adds.join(', ')}`;
}

/**
 * Versioned migrations of an account's warehouse schema, applied in order and recorded in
 * `<schema>._migrations`. Append; never edit a released step: a schema that has applied it
 * will not apply it again. Each step names its own columns, literally: none is derived from
 * `warehouseTables`, which describes the tables as they are now. A column added there needs a
 * step here (`addColumns`, or an ALTER of its own for a changed type); warehouse-ddl.test.ts
 * fails until the migrations give a fresh schema the same columns as `warehouseTables`.
 */
export const warehouseMigrations: { version: number; statements: (schema: string) => string[] }[] = [
  {
    version: 1,
    statements: (schema) => [
      ...v1Tables.map(({ table, key, columns }) => createTable(schema, table, key, columns)),
      `CREATE INDEX IF NOT EXISTS events_timestamp ON ${quoteIdent(schema)}.events (timestamp)`,
      `CREATE INDEX IF NOT EXISTS events_user ON ${quoteIdent(schema)}.events (user_id)`,
    ],
  },
  {
    // Rows written before this step have no orders: the loader reads them as the order of the
    // row's own event, for the row and each of its traits.
    version: 2,
    statements: (schema) => [
      addColumns(schema, 'users', [
        ['_event_order', 'text COLLATE "C"'],
        ['_trait_orders', 'jsonb'],
      ]),
      addColumns(schema, 'groups', [
        ['_event_order', 'text COLLATE "C"'],
        ['_trait_orders', 'jsonb'],
      ]),
    ],
  },
  {
    // The columns a regulation erases a subject by (subject-columns.ts), indexed so that its
    // chunks find the rows without reading the table. users.user_id and events.user_id have
    // theirs already. On a large events table this step runs under the statement time limit
    // like any other, and blocks the account's writes while it builds: an operator may create
    // the indexes first with CREATE INDEX CONCURRENTLY under the same names, and the step then
    // finds them (IF NOT EXISTS).
    version: 3,
    statements: (schema) =>
      (
        [
          ['events_anonymous', 'events', 'anonymous_id'],
          ['users_anonymous', 'users', 'anonymous_id'],
          ['groups_user', 'groups', 'user_id'],
          ['groups_anonymous', 'groups', 'anonymous_id'],
          ['aliases_user', 'aliases', 'user_id'],
          ['aliases_anonymous', 'aliases', 'anonymous_id'],
          ['aliases_previous', 'aliases', 'previous_id'],
        ] as const
      ).map(
        ([index, table, column]) =>
          `CREATE INDEX IF NOT EXISTS ${index} ON ${quoteIdent(schema)}.${table} (${column})`,
      ),
  },
  {
    // What a tracking plan found in each event (docs/tracking-plans.md); null on every row written
    // before, as on a row of a key without a plan. Adding a nullable column rewrites no row.
    version: 4,
    statements: (schema) =>
      (['events', 'users', 'groups', 'aliases'] as const).map((table) =>
        addColumns(schema, table, [['plan_violations', 'jsonb']]),
      ),
  },
];
