import type { WarehouseTable } from '@pipeline/events';
import { eventOrderOf } from '../event-order';
import { UnserializableValue } from '../copy-text';
import { eventTimeColumns, insertColumns } from './clickhouse-ddl';

// How a normalized row becomes a JSONEachRow line of its ClickHouse table: pure.

/** A JavaScript instant as ClickHouse's DateTime64(6) text, in UTC: `YYYY-MM-DD HH:MM:SS.ffffff`. */
export function receivedText(value: unknown): string | null {
  const iso = storedTime(value);
  return iso === null ? null : `${iso.slice(0, 10)} ${iso.slice(11, 26)}`;
}

function instantOf(value: unknown): number | undefined {
  const ms =
    value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/**
 * An event's own time as it is stored: ISO-8601 with microseconds and a Z, fixed width for the
 * years 0001-9999 the door accepts, so that text order is time order, and the same text
 * PostgreSQL's engine reads its timestamps as (to_char ... 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"').
 */
export function storedTime(value: unknown): string | null {
  const ms = instantOf(value);
  if (ms === undefined) return null;
  return `${new Date(ms).toISOString().slice(0, 23)}000Z`;
}

/** The largest integer a JSON number carries exactly: versions count down from it. */
const topVersion = Number.MAX_SAFE_INTEGER;

/**
 * The ReplacingMergeTree version of a row: its receipt reversed, so that of two copies of one
 * message the first received stays, as PostgreSQL keeps the stored row.
 */
export const versionOf = (row: Readonly<Record<string, unknown>>): number =>
  topVersion - Math.max(0, instantOf(row.received_at) ?? 0);

// In a /u pattern a pair of surrogates is one code point, so only a lone one matches.
const loneSurrogate = /\p{Cs}/gu;

/** Text as UTF-8 carries it: a lone surrogate becomes U+FFFD, as PostgreSQL's COPY encoding makes it. */
export const utf8Text = (text: string): string => text.replace(loneSurrogate, '\uFFFD');

function jsonText(value: unknown): string {
  try {
    return clickhouseJsonText(value);
  } catch (error) {
    throw new UnserializableValue(`value cannot be serialized as JSON: ${(error as Error).message}`);
  }
}

function storedValue(column: string, json: boolean, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (column === 'received_at') return receivedText(value);
  if (eventTimeColumns.has(column)) return storedTime(value);
  if (json || (typeof value === 'object' && !(value instanceof Date))) return jsonText(value);
  if (typeof value === 'string') return utf8Text(value);
  return value;
}

/**
 * The values of a normalized row for its stored table (a JSONEachRow object): every column of
 * the table, times and JSON as described in clickhouse-ddl.ts, and for users and groups the
 * row's ordering key. Throws UnserializableValue (data) for a value JSON cannot carry.
 */
export function rowValues(
  table: WarehouseTable,
  row: Readonly<Record<string, unknown>>,
  jsonColumns: ReadonlySet<string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const column of insertColumns(table)) {
    if (column === '_version') out[column] = versionOf(row);
    else if (column === '_event_order') out[column] = eventOrderOf(row);
    else out[column] = storedValue(column, jsonColumns.has(column), row[column]);
  }
  return out;
}

// JSON.rawJSON (ES2024; Node 21+), not yet in this project's TypeScript lib.
const { rawJSON } = JSON as unknown as { rawJSON: (text: string) => unknown };
const INT64_SPAN = 2 ** 63;

/**
 * A JSON value as the text of a ClickHouse column. ClickHouse's JSON functions (simdjson) refuse
 * a whole document that holds an integer outside Int64 and UInt64 written without a fraction or
 * exponent, and JSON.stringify writes -2^63 as -9223372036854776000, just past Int64:
 * JSONExtractKeysAndValuesRaw then answers nothing and the users view loses every trait. Such a
 * number is written in exponent form instead, the same double.
 */
export function clickhouseJsonText(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    // Number.isInteger is false for anything but a number.
    Number.isInteger(item) && Math.abs(item as number) >= INT64_SPAN
      ? rawJSON((item as number).toExponential())
      : item,
  );
}
