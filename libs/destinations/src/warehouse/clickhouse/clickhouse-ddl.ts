import { warehouseTables, type WarehouseTable } from '@pipeline/events';

// The tables of an account's ClickHouse database, as text: pure, so what they name is checked
// without a server. One database per account, as PostgreSQL has a schema per account (see
// docs/warehouses.md, "ClickHouse": why not shared tables keyed by account).

/** A name quoted for ClickHouse: backquotes, with backslash and backquote escaped. */
export const quoteName = (name: string): string => `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;

/** An account's database: the names placements give (account_<hex>, or a customer's plain name). */
const databaseName = /^[a-z_][a-z0-9_]{0,62}$/;
export const isClickHouseDatabaseName = (name: string): boolean => databaseName.test(name);

/** Where an event's own times are kept as text: see storedTime. */
export const eventTimeColumns: ReadonlySet<string> = new Set(['timestamp', 'original_timestamp', 'sent_at']);

/** The key of each table's rows: one event or alias per message; one user or group per id. */
export const idColumn: Record<WarehouseTable, string> = {
  events: 'message_id',
  aliases: 'message_id',
  users: 'user_id',
  groups: 'group_id',
};

/** Users and groups are stored as every event that set them (`<table>_rows`), read through a view. */
export const foldedTables: ReadonlySet<WarehouseTable> = new Set(['users', 'groups']);

/** The table rows are inserted into: the view's rows table for users and groups. */
export const storedTableOf = (table: WarehouseTable): string =>
  foldedTables.has(table) ? `${table}_rows` : table;

/**
 * The ClickHouse type of a column of warehouseTables:
 * - received_at, set by ingestion, is a DateTime64(6, 'UTC'): the partition and change key.
 * - The event's own times (timestamp, sent_at, original_timestamp) are ISO-8601 text of fixed
 *   width (`YYYY-MM-DDTHH:MM:SS.ffffffZ`), which sorts as time does: the door accepts the years
 *   0001-9999, and DateTime64 holds 1900-2299 only.
 * - JSON columns are JSON text (`String`): the JSON type would split keys containing dots into
 *   paths, fold `{"a.b":1}` into `{"a":{"b":1}}`, drop nulls and retype numbers, so what the
 *   door accepted would not read back equal.
 * - The key columns are never null (ORDER BY keys); a null key fails the insert as data.
 */
export function columnType(table: WarehouseTable, column: string, type: string): string {
  if (column === 'received_at') return "DateTime64(6, 'UTC')";
  if (column === idColumn[table] || (foldedTables.has(table) && column === 'message_id')) return 'String';
  if (type === 'integer') return 'Nullable(Int32)';
  return 'Nullable(String)';
}

/** Columns every stored table has beyond warehouseTables': the version ReplacingMergeTree keeps. */
const versionColumn = ['_version', 'UInt64'] as const;
/** Columns of the rows of users and groups: the event's ordering key, and per-trait orders of an imported row. */
const orderColumns = [
  ['_event_order', 'String'],
  ['_trait_orders', "String DEFAULT '{}'"],
] as const;

export interface ClickHouseLayout {
  /** The ON CLUSTER name: DDL runs on every node, tables are replicated and written through Distributed tables. */
  cluster?: string;
}

const onCluster = (layout: ClickHouseLayout) =>
  layout.cluster ? ` ON CLUSTER ${quoteName(layout.cluster)}` : '';

/** The columns a stored table has, in order, with their ClickHouse types. */
export function storedColumns(table: WarehouseTable): [name: string, type: string][] {
  const columns = Object.entries(warehouseTables[table]).map(([name, type]): [string, string] => [
    name,
    columnType(table, name, type),
  ]);
  if (foldedTables.has(table)) columns.push(...orderColumns.map(([n, t]): [string, string] => [n, t]));
  columns.push([...versionColumn]);
  return columns;
}

/** The names a row is inserted with (`_trait_orders` has its default). */
export const insertColumns = (table: WarehouseTable): string[] =>
  storedColumns(table)
    .map(([name]) => name)
    .filter((name) => name !== '_trait_orders');

function mergeTree(db: string, table: string, layout: ClickHouseLayout): string {
  // The version is the receipt time reversed: of two copies of one message, the first kept.
  if (!layout.cluster) return 'ReplacingMergeTree(_version)';
  return `ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/${db}/${table}', '{replica}', _version)`;
}

function createStored(db: string, table: WarehouseTable, layout: ClickHouseLayout): string[] {
  const stored = storedTableOf(table);
  const local = layout.cluster ? `${stored}_local` : stored;
  const columns = storedColumns(table)
    .map(([name, type]) => `${quoteName(name)} ${type}`)
    .join(', ');
  const key = foldedTables.has(table) ? `(${quoteName(idColumn[table])}, message_id)` : 'message_id';
  // Events and aliases by month of receipt; the rows of users and groups are not partitioned,
  // so that two copies of one event always meet in a merge (and in FINAL).
  const partition = foldedTables.has(table) ? '' : ' PARTITION BY toYYYYMM(received_at)';
  // A non-replicated table drops a retried insert only with a deduplication window.
  const settings = layout.cluster ? '' : ' SETTINGS non_replicated_deduplication_window = 1000';
  const statements = [
    `CREATE TABLE IF NOT EXISTS ${quoteName(db)}.${quoteName(local)}${onCluster(layout)} (${columns}) ENGINE = ${mergeTree(db, local, layout)}${partition} ORDER BY ${key}${settings}`,
  ];
  if (layout.cluster) {
    // Every row of an account on one shard: its database is its sharding key.
    statements.push(
      `CREATE TABLE IF NOT EXISTS ${quoteName(db)}.${quoteName(stored)}${onCluster(layout)} AS ${quoteName(db)}.${quoteName(local)} ENGINE = Distributed(${quoteName(layout.cluster)}, ${quoteName(db)}, ${quoteName(local)}, cityHash64(${quoteString(db)}))`,
    );
  }
  return statements;
}

export const quoteString = (text: string): string => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * A list of keys as SQL text, `('a', 'b')`, for `IN`: in the query's body, where a list of
 * thousands of ids fits. As a query parameter it would travel in the URL, which servers cap
 * (ClickHouse's http_max_uri_size; Node's 16 KiB of headers refused a batch of 400 ids).
 * Never empty: `IN ()` is a syntax error, and no row has the key ''.
 */
export const keyList = (keys: readonly string[]): string =>
  `(${keys.length === 0 ? "''" : keys.map(quoteString).join(', ')})`;

/**
 * The view of users or groups: one row per id, as PostgreSQL's table holds it. The columns are
 * the newest event's, by (timestamp, received_at, message_id) as `_event_order` orders them;
 * each trait key keeps the value of the newest event that has it (so an older event only fills
 * traits that are missing), with its order in `_trait_orders`. FINAL first drops the copies of
 * one event, keeping the first received: the same event sent again changes nothing.
 */
export function foldedView(db: string, table: 'users' | 'groups', layout: ClickHouseLayout = {}): string {
  const id = quoteName(idColumn[table]);
  const rows = `${quoteName(db)}.${quoteName(storedTableOf(table))} FINAL`;
  const columns = Object.keys(warehouseTables[table]).filter((c) => c !== idColumn[table] && c !== 'traits');
  // argMax skips NULLs of a Nullable argument; in a tuple a NULL is a value, as in the newest row.
  const newest = columns
    .map((c) => `argMax(tuple(${quoteName(c)}), _event_order).1 AS ${quoteName(c)}`)
    .join(', ');
  const keyOrder = `if(JSONHas(_trait_orders, kv.1), JSONExtractString(_trait_orders, kv.1), _event_order)`;
  const object = (value: string) =>
    `concat('{', arrayStringConcat(groupArray(concat(toJSONString(k), ':', ${value})), ','), '}')`;
  const traits = `SELECT ${id}, ${object('v')} AS traits, ${object('toJSONString(o)')} AS _trait_orders
      FROM (SELECT ${id}, kv.1 AS k, argMax(kv.2, ko) AS v, max(ko) AS o
              FROM (SELECT ${id}, arrayJoin(JSONExtractKeysAndValuesRaw(ifNull(traits, '{}'))) AS kv, ${keyOrder} AS ko FROM ${rows})
             GROUP BY ${id}, k)
     GROUP BY ${id}`;
  const list = Object.keys(warehouseTables[table])
    .map((c) =>
      c === 'traits' ? `if(t.traits = '', '{}', t.traits) AS traits` : `c.${quoteName(c)} AS ${quoteName(c)}`,
    )
    .join(', ');
  return `CREATE OR REPLACE VIEW ${quoteName(db)}.${quoteName(table)}${onCluster(layout)} AS
    SELECT ${list}, c.newest_order AS _event_order, if(t._trait_orders = '', '{}', t._trait_orders) AS _trait_orders
      FROM (SELECT ${id}, ${newest}, max(_event_order) AS newest_order FROM ${rows} GROUP BY ${id}) AS c
      LEFT JOIN (${traits}) AS t ON t.${id} = c.${id}`;
}

/**
 * Versioned migrations of an account's database, applied in order and recorded in
 * `<db>._migrations`. Append; never edit a released step.
 */
export const clickhouseMigrations: {
  version: number;
  statements: (db: string, layout: ClickHouseLayout) => string[];
}[] = [
  {
    version: 1,
    statements: (db, layout) => [
      ...(['events', 'users', 'groups', 'aliases'] as const).flatMap((t) => createStored(db, t, layout)),
      foldedView(db, 'users', layout),
      foldedView(db, 'groups', layout),
    ],
  },
  {
    // What a tracking plan found in each event (docs/tracking-plans.md). A database that step 1
    // created after the column was declared has it already (IF NOT EXISTS); the views of users
    // and groups are made again so that they show it.
    version: 2,
    statements: (db, layout) => [
      ...(['events', 'users', 'groups', 'aliases'] as const).flatMap((table) => {
        const stored = storedTableOf(table);
        // In the place step 1 gives it now (before the stored-only columns), so that every
        // database of an engine has one column order, whichever step created the column.
        const before = Object.keys(warehouseTables[table])
          .filter((c) => c !== 'plan_violations')
          .at(-1) as string;
        const add = (name: string) =>
          `ALTER TABLE ${quoteName(db)}.${quoteName(name)}${onCluster(layout)} ADD COLUMN IF NOT EXISTS plan_violations Nullable(String) AFTER ${quoteName(before)}`;
        return layout.cluster ? [add(`${stored}_local`), add(stored)] : [add(stored)];
      }),
      foldedView(db, 'users', layout),
      foldedView(db, 'groups', layout),
    ],
  },
];

/** The database and its migrations table. */
export const databaseStatements = (db: string, layout: ClickHouseLayout): string[] => [
  `CREATE DATABASE IF NOT EXISTS ${quoteName(db)}${onCluster(layout)}`,
  `CREATE TABLE IF NOT EXISTS ${quoteName(db)}._migrations${onCluster(layout)} (version UInt32, applied_at DateTime64(6, 'UTC') DEFAULT now64(6)) ENGINE = ${layout.cluster ? `ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/${db}/_migrations', '{replica}')` : 'ReplacingMergeTree'} ORDER BY version`,
];
