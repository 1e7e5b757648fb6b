import { parseJsonText, warehouseTables, type WarehouseTable } from '@pipeline/events';
import { parseTimestamp, utcText } from '../copy-fields';
import { UnserializableValue } from '../copy-text';
import { eventOrderOf } from '../event-order';
import { isPlainIdentifier } from '../stream-table-columns';
import type { TableShape, WarehouseTableName } from '../warehouse-engine';
import { eventTimeColumns, foldedTables, idColumn, quoteName, storedColumns } from './clickhouse-ddl';
import { versionOf } from './clickhouse-rows';

// What a move between warehouses sends to a ClickHouse warehouse and reads from it: pure. Rows
// travel as PostgreSQL's COPY text whatever the engines (see copy-fields.ts), and a table's
// shape names PostgreSQL's types (format_type's names), so either engine creates and merges it.
// This module turns a ClickHouse table's columns into such text and back.

export const warehouseTableNames: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];

/** PostgreSQL's name of each warehouseTables column type, as format_type writes it. */
const postgresType = {
  text: 'text',
  integer: 'integer',
  timestamptz: 'timestamp with time zone',
  jsonb: 'jsonb',
} as const;

/**
 * A warehouse table as the PostgreSQL engine describes it: warehouseTables' columns, users and
 * groups with their hidden ordering columns, keyed by message id or by the user's or group's id.
 */
export function warehouseShape(table: WarehouseTable): TableShape {
  const columns = Object.entries(warehouseTables[table]).map(([name, type]) => ({
    name,
    type: postgresType[type],
  }));
  if (foldedTables.has(table))
    columns.push({ name: '_event_order', type: 'text' }, { name: '_trait_orders', type: 'jsonb' });
  return { table, kind: table, columns, key: [idColumn[table]] };
}

/** The stream table's key column: ClickHouse names it `id` whatever the source's key. */
export const streamKey = 'id';

/** PostgreSQL's type for a stream table's ClickHouse column. */
export function postgresTypeOfStream(name: string, type: string, comment?: string): string {
  if (name === '_raw' || comment === 'jsonb') return 'jsonb';
  if (type.startsWith('DateTime64')) return 'timestamp with time zone';
  if (type.includes('Float') || type.includes('Decimal') || /Int\d/.test(type)) return 'numeric';
  if (type.includes('Bool')) return 'boolean';
  return 'text';
}

/** A stream table as PostgreSQL's engine describes one: key `id`, `_raw`, `_synced_at`, typed columns. */
export function streamShape(
  table: string,
  columns: readonly { name: string; type: string; comment?: string }[],
): TableShape {
  return {
    table,
    kind: 'stream',
    columns: columns.map((c) => ({ name: c.name, type: postgresTypeOfStream(c.name, c.type, c.comment) })),
    key: [streamKey],
  };
}

/** The ClickHouse type of a stream column the shape's PostgreSQL type asks for. */
export function streamColumnTypeOf(type: string): string {
  if (
    type === 'numeric' ||
    type === 'double precision' ||
    type === 'real' ||
    /^(integer|bigint|smallint)$/.test(type)
  )
    return 'Nullable(Float64)';
  if (type === 'boolean') return 'Nullable(Bool)';
  return 'Nullable(String)';
}

/**
 * The expression that reads a column as the COPY text PostgreSQL reads with the shape's type:
 * DateTime64 as `YYYY-MM-DD HH:MM:SS.ffffff+00`, numbers and booleans as their text, strings
 * (JSON text and the ISO text of event times included) as they are; null stays null.
 */
export function exportExpression(name: string, type: string | undefined): string {
  const column = quoteName(name);
  if (type === undefined) return 'NULL';
  if (type.startsWith('DateTime64') || type.startsWith('Nullable(DateTime64'))
    return `formatDateTime(${column}, '%Y-%m-%d %H:%i:%S.%f+00', 'UTC')`;
  if (type === 'String' || type === 'Nullable(String)') return column;
  return `toString(${column})`;
}

/** The table (or view) a move reads a ClickHouse table from; FINAL where copies may not be merged yet. */
export function readFrom(db: string, table: string): string {
  const folded = foldedTables.has(table as WarehouseTable);
  return `${quoteName(db)}.${quoteName(table)}${folded ? '' : ' FINAL'}`;
}

/** The key a table's rows are compared by: its id column, a stream table's `id`. */
export const keyColumnOf = (table: string): string =>
  (warehouseTableNames as readonly string[]).includes(table) ? idColumn[table as WarehouseTable] : streamKey;

/** The column a table's rows are dated by, as PostgreSQL's engine dates them. */
export const dayColumnOf = (table: string): string =>
  (warehouseTableNames as readonly string[]).includes(table) ? 'received_at' : '_synced_at';

/**
 * The first 15 hex digits of a key's MD5 as an integer (PostgreSQL's
 * `('x' || substr(md5(key), 1, 15))::bit(60)::bigint`): the first 8 bytes read big-endian, the
 * low 4 bits dropped.
 */
const keyHash = (key: string) =>
  `bitShiftRight(reinterpretAsUInt64(reverse(substring(MD5(${key}), 1, 8))), 4)`;
const dayOf = (column: string) => `ifNull(formatDateTime(${quoteName(column)}, '%Y-%m-%d', 'UTC'), 'none')`;

/** Per UTC day the rows and the sum of their keys' hashes, as table-copy.ts's daysStatement gives them. */
export function daysQuery(db: string, table: string): string {
  const key = quoteName(keyColumnOf(table));
  return `SELECT ${dayOf(dayColumnOf(table))} AS day, toString(count()) AS rows,
                 toString(sum(toUInt256(${keyHash(key)}))) AS hash
            FROM ${readFrom(db, table)} GROUP BY day ORDER BY day`;
}

/** The keys of one day's rows (parameter `day`). */
export function keysOnQuery(db: string, table: string): string {
  return `SELECT ${quoteName(keyColumnOf(table))} AS key FROM ${readFrom(db, table)}
           WHERE ${dayOf(dayColumnOf(table))} = {day:String} ORDER BY key`;
}

/** A DateTime64(6) value from COPY text: 1900-2299, the type's range. */
function dateTime64(name: string, text: string): string {
  const micros = parseTimestamp(text);
  const value = utcText(micros, ' ');
  const year = Number(value?.slice(0, 4));
  if (value === null || year < 1900 || year > 2299)
    throw new UnserializableValue(
      `${name} ${text} is outside what ClickHouse's DateTime64 holds (1900-2299)`,
    );
  return value;
}

/** An event's own time from COPY text: the fixed-width ISO text the engine stores (years 0001-9999). */
function eventTime(name: string, text: string): string {
  const value = utcText(parseTimestamp(text), 'T');
  if (value === null) throw new UnserializableValue(`${name} ${text} is outside the years 0001-9999`);
  return `${value}Z`;
}

const numberText = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A field's value for a ClickHouse column of that type; what does not fit is null, or refused as data. */
export function clickhouseValue(name: string, type: string, text: string | null): unknown {
  if (text === null) {
    if (!type.startsWith('Nullable') && !type.startsWith('String DEFAULT'))
      throw new UnserializableValue(`${name} cannot be null`);
    return null;
  }
  if (type.includes('DateTime64')) return dateTime64(name, text);
  if (type.includes('Int32')) {
    if (!/^[+-]?\d+$/.test(text)) throw new UnserializableValue(`${name} ${text} is not an integer`);
    return Number(text);
  }
  if (type.includes('Float64')) return numberText.test(text) ? Number(text) : null;
  if (type.includes('Bool'))
    return text === 't' || text === 'true' ? true : text === 'f' || text === 'false' ? false : null;
  return text;
}

/**
 * The stored row of users_rows, events, ... for one exported row (fields by the shape's column
 * names): event times as ISO text, JSON as its text, `_version` from the receipt; users and
 * groups keep the row's orders (an old row without them counts as its own event's order).
 */
export function warehouseRowValues(
  table: WarehouseTable,
  fields: ReadonlyMap<string, string | null>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, type] of storedColumns(table)) {
    if (name === '_version') continue;
    const text = fields.get(name) ?? null;
    if (name === '_event_order' || name === '_trait_orders') continue;
    out[name] =
      eventTimeColumns.has(name) && text !== null ? eventTime(name, text) : clickhouseValue(name, type, text);
  }
  const receivedAt = new Date(`${String(out.received_at).replace(' ', 'T')}Z`);
  out._version = versionOf({ received_at: receivedAt });
  if (foldedTables.has(table)) {
    const timestamp = typeof out.timestamp === 'string' ? new Date(out.timestamp) : null;
    out._event_order =
      fields.get('_event_order') ??
      eventOrderOf({ timestamp, received_at: receivedAt, message_id: out.message_id });
    out._trait_orders = fields.get('_trait_orders') ?? '{}';
  }
  return out;
}

/** The fields of a COPY row by the shape's column names; an invalid shape or row width throws. */
export function fieldsByName(shape: TableShape, row: readonly (string | null)[]): Map<string, string | null> {
  if (row.length !== shape.columns.length)
    throw new UnserializableValue(
      `a row of ${shape.table} has ${row.length} fields, its shape ${shape.columns.length}`,
    );
  return new Map(shape.columns.map((c, i) => [c.name, row[i] ?? null]));
}

/** JSON text in one spelling (keys sorted), so two engines' texts of one value compare equal. */
export function canonicalJson(text: string): string {
  const sort = (value: unknown): unknown =>
    Array.isArray(value)
      ? value.map(sort)
      : value !== null && typeof value === 'object'
        ? Object.fromEntries(
            Object.keys(value)
              .sort()
              .map((k) => [k, sort((value as Record<string, unknown>)[k])]),
          )
        : value;
  try {
    return JSON.stringify(sort(parseJsonText(text)));
  } catch {
    return text;
  }
}

/** Checks a stream table's shape for ClickHouse: one key column; plain names (checkedShape did). */
export function checkStreamShape(shape: TableShape): string {
  const [key, ...more] = shape.key;
  if (key === undefined || more.length > 0)
    throw new Error(`stream table ${shape.table} must have one key column for ClickHouse`);
  if (!isPlainIdentifier(key)) throw new Error(`invalid column name ${key}`);
  if (!shape.columns.some((c) => c.name === '_raw') || !shape.columns.some((c) => c.name === '_synced_at'))
    throw new Error(`stream table ${shape.table} must have _raw and _synced_at`);
  return key;
}
