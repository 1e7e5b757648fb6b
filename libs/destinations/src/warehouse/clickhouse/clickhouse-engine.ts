import { createHash } from 'node:crypto';
import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { clickhouseClient, type ClickHouseGuardOptions } from '@pipeline/clickhouse';
import { parseJsonText, warehouseTables, type WarehouseRow, type WarehouseTable } from '@pipeline/events';
import type { WarehouseConnection } from '@pipeline/tenancy';
import type {
  AccountLocation,
  ChangedRow,
  ChangeRequest,
  ReadOnlyQueries,
  ReadOnlyQueryName,
  ReadOptions,
  RowBatch,
  StreamWriteResult,
  TableDay,
  TableExport,
  TableShape,
  WarehouseEngine,
  WarehouseErrorClass,
  WarehouseTableName,
  WriteOrigin,
  WriteResult,
} from '../warehouse-engine';
import type { WarehouseQueryMeter } from '../postgres/postgres-engine';
import type { WarehouseTimeouts } from '../warehouse-pool';
import { isPlainIdentifier, uniqueByKey, wantedColumns, type ColumnType } from '../stream-table-columns';
import { jsonColumns, rowsByTable } from '../warehouse-row-batches';
import {
  clickhouseMigrations,
  databaseStatements,
  foldedTables,
  idColumn,
  insertColumns,
  isClickHouseDatabaseName,
  keyList,
  quoteName,
  storedTableOf,
  type ClickHouseLayout,
} from './clickhouse-ddl';
import { clickhouseErrorKind } from './clickhouse-errors';
import { clickhouseJsonText, receivedText, rowValues, storedTime, utf8Text } from './clickhouse-rows';
import {
  canonicalJson,
  checkStreamShape,
  clickhouseValue,
  daysQuery,
  exportExpression,
  fieldsByName,
  keyColumnOf,
  keysOnQuery,
  readFrom,
  streamColumnTypeOf,
  streamKey,
  streamShape,
  warehouseRowValues,
  warehouseShape,
} from './clickhouse-table-copy';
import { copyLine, parseCopyText } from '../copy-fields';
import { checkedShape } from '../postgres/table-copy';

/** The settings of an engine's HTTP client; a `connect` hook builds the client from them. */
export interface ClickHouseClientSettings {
  maxOpenConnections: number;
  requestTimeoutMs: number;
  idleSocketTtlMs: number;
}

/** Builds an engine's client (an egress-guarded one for a customer's server). */
export type ClickHouseClientFactory = (
  connection: WarehouseConnection,
  settings: ClickHouseClientSettings,
) => ClickHouseClient;

export interface ClickHouseEngineOptions {
  timeouts: WarehouseTimeouts;
  /** HTTP connections this engine opens at most. */
  poolMax: number;
  /** An idle keep-alive socket is closed after this long. */
  idleTimeoutMs: number;
  /** Rows per insert (WAREHOUSE_ROWS_PER_COPY). */
  rowsPerInsert?: number;
  meter?: WarehouseQueryMeter;
  connect?: ClickHouseClientFactory;
  /** With a cluster name, DDL runs ON CLUSTER and rows go through Distributed tables. */
  cluster?: string;
}

/**
 * Clients built by @pipeline/clickhouse's clickhouseClient: every field checked, and for a
 * customer's server every connect checked against the egress policy (`guard`: the operator's
 * EGRESS_ALLOW_PRIVATE_RANGES; none by default, so a private address is refused).
 */
export const guardedClickHouseClients =
  (guard: ClickHouseGuardOptions = {}): ClickHouseClientFactory =>
  (connection, settings) =>
    clickhouseClient(connection, {
      guard,
      requestTimeoutMs: settings.requestTimeoutMs,
      idleSocketTtlMs: settings.idleSocketTtlMs,
      maxOpenConnections: settings.maxOpenConnections,
    });

/** The clients of platform warehouses, and of customers' ones with no private range allowed. */
export const directClickHouseClient: ClickHouseClientFactory = guardedClickHouseClients();

const tableNames: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];
const utcDay = /^\d{4}-\d{2}-\d{2}$/;
const jsonColumnsOf = Object.fromEntries(
  (Object.keys(warehouseTables) as WarehouseTable[]).map((t) => [t, jsonColumns(warehouseTables[t])]),
) as Record<WarehouseTable, Set<string>>;

/** A timestamp column as the watermark text: ISO-8601 with microseconds and a Z. */
const atText = (column: string) => `formatDateTime(${column}, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC')`;
/** A watermark's time (ISO text) as DateTime64(6). */
const atParam = (name: string) => `parseDateTime64BestEffort({${name}:String}, 6, 'UTC')`;

interface ChangeQuery {
  table: string;
  sql: string;
  params: Record<string, unknown>;
  toChange: (row: Record<string, unknown>) => ChangedRow;
}

const parsedJson = (text: unknown): unknown => (typeof text === 'string' ? parseJsonText(text) : text);

function changeQuery(db: string, request: ChangeRequest): ChangeQuery {
  const { at, key } = request.since;
  const since = { at, key };
  if (request.kind === 'users') {
    return {
      table: 'users',
      sql: `SELECT user_id, anonymous_id, traits, ${atText('received_at')} AS at
              FROM ${db}.users
             WHERE (received_at, user_id) > (${atParam('at')}, {key:String})
             ORDER BY received_at, user_id`,
      params: since,
      toChange: ({ at: rowAt, ...row }) => ({
        at: String(rowAt),
        key: String(row.user_id),
        row: { ...row, traits: parsedJson(row.traits) },
      }),
    };
  }
  if (request.kind === 'events') {
    return {
      table: 'events',
      sql: `SELECT message_id, type, event, name, properties, anonymous_id, user_id, timestamp,
                   ${atText('received_at')} AS at
              FROM ${db}.events FINAL
             WHERE received_at >= ${atParam('receivedSince')}
               AND (received_at, message_id) > (${atParam('at')}, {key:String})
               AND ({all:UInt8} = 1 OR coalesce(event, name) IN {names:Array(String)})
             ORDER BY received_at, message_id`,
      params: {
        ...since,
        receivedSince: request.receivedSince.toISOString(),
        all: request.names === null ? 1 : 0,
        names: request.names ?? [],
      },
      toChange: ({ at: rowAt, ...row }) => ({
        at: String(rowAt),
        key: String(row.message_id),
        row: { ...row, properties: parsedJson(row.properties) },
      }),
    };
  }
  if (!isPlainIdentifier(request.table)) throw new Error(`invalid stream table name ${request.table}`);
  return {
    table: request.table,
    sql: `SELECT id AS key, _raw AS raw, ${atText('_synced_at')} AS at FROM ${db}.${quoteName(request.table)} FINAL
           WHERE (_synced_at, id) > (${atParam('at')}, {key:String})
           ORDER BY _synced_at, id`,
    params: since,
    toChange: (row) => ({
      at: String(row.at),
      key: String(row.key),
      row: parsedJson(row.raw) as Record<string, unknown>,
    }),
  };
}

/** Stream tables: a typed column per field; numbers as Float64 (the exact record stays in `_raw`). */
const streamColumnType: Record<ColumnType, string> = {
  text: 'Nullable(String)',
  numeric: 'Nullable(Float64)',
  boolean: 'Nullable(Bool)',
  jsonb: 'Nullable(String)',
};

const columnTypeOfStored = (type: string): ColumnType =>
  type.includes('Float') ? 'numeric' : type.includes('Bool') ? 'boolean' : 'text';

function streamValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      return typeof value === 'string' ? utf8Text(value) : clickhouseJsonText(value);
    case 'numeric':
      if (typeof value === 'number') return Number.isFinite(value) ? value : null;
      return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'jsonb':
      return clickhouseJsonText(value);
  }
}

interface Summary {
  read_bytes?: string;
  written_rows?: string;
}

function summaryOf(headers: Record<string, string | string[] | undefined>): Summary {
  const raw = headers['x-clickhouse-summary'];
  if (typeof raw !== 'string') return {};
  try {
    return JSON.parse(raw) as Summary;
  } catch {
    return {};
  }
}

/**
 * The ClickHouse warehouse engine: one HTTP client per warehouse. Each account is a database;
 * events and aliases are ReplacingMergeTree tables keyed by message id, users and groups are
 * every event that set them plus a view that folds them as PostgreSQL's upsert does (see
 * clickhouse-ddl.ts). Inserts are synchronous and named by an insert_deduplication_token from
 * the rows' Kafka origin, so a redelivered batch adds nothing; reads that must be exact read
 * with FINAL. Reads are metered by the bytes the server says it read (X-ClickHouse-Summary).
 */
export class ClickHouseEngine implements WarehouseEngine {
  readonly engine = 'clickhouse' as const;
  private readonly client: ClickHouseClient;
  private readonly layout: ClickHouseLayout;
  private readonly meter: WarehouseQueryMeter | undefined;
  private readonly rowsPerInsert: number;
  private readonly settings: ClickHouseSettings;
  private readonly ready = new Map<string, Promise<void>>();
  /** Stream tables' columns, per `db.table`, as this process last saw them. */
  private readonly streamColumns = new Map<string, Map<string, ColumnType>>();

  constructor(connection: WarehouseConnection, options: ClickHouseEngineOptions) {
    const connect = options.connect ?? directClickHouseClient;
    this.client = connect(connection, {
      maxOpenConnections: options.poolMax,
      // The server ends a statement at max_execution_time; the client waits a little longer.
      requestTimeoutMs: options.timeouts.statementTimeoutMs + 5_000,
      idleSocketTtlMs: Math.min(options.idleTimeoutMs, 2_500),
    });
    this.layout = options.cluster ? { cluster: options.cluster } : {};
    this.meter = options.meter;
    this.rowsPerInsert = options.rowsPerInsert ?? 10_000;
    this.settings = {
      max_execution_time: Math.max(1, Math.ceil(options.timeouts.statementTimeoutMs / 1000)),
    };
  }

  ensureAccount(account: AccountLocation): Promise<void> {
    let db: string;
    try {
      db = checkDatabase(account);
    } catch (error) {
      return Promise.reject(error);
    }
    let pending = this.ready.get(db);
    if (!pending) {
      pending = this.migrate(account.schema).catch((error: unknown) => {
        this.ready.delete(db);
        throw error;
      });
      this.ready.set(db, pending);
    }
    return pending;
  }

  async writeRows(
    account: AccountLocation,
    rows: readonly WarehouseRow[],
    origin?: WriteOrigin,
  ): Promise<WriteResult> {
    const db = checkDatabase(account);
    await this.ensureAccount(account);
    const result: WriteResult = { written: 0, duplicates: 0 };
    const positions = new Map<object, string>();
    if (origin) rows.forEach((r, i) => positions.set(r.row, origin.positions[i] ?? String(i)));
    for (const [table, tableRows] of rowsByTable(
      rows as readonly { table: WarehouseTable; row: Record<string, unknown> }[],
    )) {
      // Serialized before anything is sent: a value JSON cannot carry fails the rows alone.
      const lines = tableRows.map((row) => ({ row, values: rowValues(table, row, jsonColumnsOf[table]) }));
      for (let i = 0; i < lines.length; i += this.rowsPerInsert) {
        const chunk = lines.slice(i, i + this.rowsPerInsert);
        const fresh = await this.unstored(db, table, chunk);
        if (fresh.length > 0) {
          const token = origin
            ? insertToken(
                origin,
                table,
                fresh.map(({ row }) => positions.get(row) ?? ''),
              )
            : undefined;
          await this.client.insert({
            table: `${db}.${quoteName(storedTableOf(table))}`,
            columns: insertColumns(table) as [string, ...string[]],
            values: fresh.map(({ values }) => values),
            format: 'JSONEachRow',
            clickhouse_settings: {
              ...this.settings,
              input_format_null_as_default: 0,
              async_insert: 0,
              ...(token ? { insert_deduplication_token: token } : {}),
            },
          });
        }
        result.written += fresh.length;
        result.duplicates += chunk.length - fresh.length;
      }
    }
    return result;
  }

  async writeStream(
    account: AccountLocation,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    const db = checkDatabase(account);
    if (!isPlainIdentifier(table) || !isPlainIdentifier(primaryKey))
      throw new Error(`invalid warehouse identifier in ${account.schema}.${table} (${primaryKey})`);
    await this.ensureAccount(account);
    const unique = uniqueByKey(table, primaryKey, records);
    if (unique.length === 0) return { written: 0, addedColumns: [] };
    const addedColumns = await this.ensureStreamColumns(db, account.schema, table, primaryKey, unique);
    const known = this.streamColumns.get(`${account.schema}.${table}`) ?? new Map<string, ColumnType>();
    const fields = [...known.keys()];
    const syncedAt = receivedText(new Date());
    for (let i = 0; i < unique.length; i += this.rowsPerInsert) {
      await this.client.insert({
        table: `${db}.${quoteName(table)}`,
        values: unique.slice(i, i + this.rowsPerInsert).map((record) => ({
          id: utf8Text(String(record[primaryKey])),
          ...Object.fromEntries(fields.map((f) => [f, streamValue(known.get(f) ?? 'text', record[f])])),
          _raw: clickhouseJsonText(record),
          _synced_at: syncedAt,
        })),
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.settings, async_insert: 0 },
      });
    }
    return { written: unique.length, addedColumns };
  }

  async readChanges(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null> {
    const db = checkDatabase(account);
    const query = changeQuery(quoteName(db), request);
    if (!(await this.tableExists(account.schema, query.table))) return null;
    return this.batches(account, query, options);
  }

  async query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]> {
    return (await this.namedQuery(account, name, params, options)) as ReadOnlyQueries[K]['row'][];
  }

  async storageBytes(account: AccountLocation): Promise<number> {
    checkDatabase(account);
    const [row] = await this.rows<{ bytes: string }>(
      `SELECT toString(sum(bytes_on_disk)) AS bytes FROM system.parts WHERE database = {db:String} AND active`,
      { db: account.schema },
    );
    return Number(row?.bytes ?? 0);
  }

  async probe(): Promise<void> {
    await this.rows('SELECT 1 AS one');
  }

  classifyError(error: unknown): WarehouseErrorClass {
    return clickhouseErrorKind(error);
  }

  async accountTables(account: AccountLocation): Promise<string[]> {
    checkDatabase(account);
    const rows = await this.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = {db:String} AND name != '_migrations' ORDER BY name`,
      { db: account.schema },
    );
    const names = rows.map((r) => r.name).filter(isPlainIdentifier);
    const stored = new Set(tableNames.flatMap((t) => [t, storedTableOf(t)]));
    const warehouse = tableNames.filter((t) => names.includes(t));
    return [...warehouse, ...names.filter((n) => !stored.has(n) && !n.endsWith('_local'))];
  }

  async exportTable(
    account: AccountLocation,
    table: string,
    options: { batchRows: number },
  ): Promise<TableExport | null> {
    const db = checkDatabase(account);
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    const columns = await this.columnsOf(db, table);
    if (columns.length === 0) return null;
    const shape = isWarehouseTable(table) ? warehouseShape(table) : streamShape(table, columns);
    return { shape, batches: this.exported(db, shape, columns, Math.max(1, Math.floor(options.batchRows))) };
  }

  async importRows(account: AccountLocation, shape: TableShape, batch: RowBatch): Promise<number> {
    const db = checkDatabase(account);
    checkedShape(shape);
    await this.ensureAccount(account);
    if (shape.kind === 'stream') {
      const key = checkStreamShape(shape);
      const types = await this.prepareStreamTable(db, shape, key);
      if (batch.rows === 0) return 0;
      return this.importStream(db, shape, key, types, parseCopyText(batch.text));
    }
    if (batch.rows === 0) return 0;
    const table = shape.kind;
    const rows = parseCopyText(batch.text).map((fields) =>
      warehouseRowValues(table, fieldsByName(shape, fields)),
    );
    const id = idColumn[table];
    const folded = foldedTables.has(table);
    // One row per key in the batch, the first: a batch of one export never holds two.
    const unique = firstPerKey(rows, (r) => String(r[id]));
    const ids = unique.map((r) => String(r[id]));
    const stored = await this.rows<Record<string, unknown>>(
      folded
        ? `SELECT * FROM ${quoteName(db)}.${quoteName(storedTableOf(table))} FINAL WHERE ${quoteName(id)} IN ${keyList(ids)}`
        : `SELECT DISTINCT message_id FROM ${quoteName(db)}.${quoteName(table)} WHERE message_id IN ${keyList(ids)}`,
    );
    let fresh: Record<string, unknown>[];
    if (folded) {
      // A user's row is stored once per (id, message id): an import of the same row again finds
      // it equal and adds nothing; a row that differs (the event written alone, without the older
      // traits the source folded in) is replaced by the newer insert of the same key.
      const json = jsonColumnsOf[table];
      const byKey = new Map(stored.map((r) => [`${String(r[id])}\u0000${String(r.message_id)}`, r]));
      fresh = unique.filter((r) => {
        const there = byKey.get(`${String(r[id])}\u0000${String(r.message_id)}`);
        return !there || !sameStoredRow(r, there, json);
      });
    } else {
      const present = new Set(stored.map((r) => String(r.message_id)));
      fresh = unique.filter((r) => !present.has(String(r.message_id)));
    }
    for (let i = 0; i < fresh.length; i += this.rowsPerInsert) {
      const chunk = fresh.slice(i, i + this.rowsPerInsert);
      await this.client.insert({
        table: `${quoteName(db)}.${quoteName(storedTableOf(table))}`,
        columns: Object.keys(chunk[0] as object) as [string, ...string[]],
        values: chunk,
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.settings, input_format_null_as_default: 0, async_insert: 0 },
      });
    }
    return fresh.length;
  }

  async tableDays(account: AccountLocation, table: string): Promise<TableDay[]> {
    const db = checkDatabase(account);
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    if (!(await this.tableExists(db, table))) return [];
    const rows = await this.rows<{ day: string; rows: string; hash: string }>(daysQuery(db, table));
    return rows.map((r) => ({ day: r.day, rows: Number(r.rows), hash: r.hash }));
  }

  async tableKeysOn(account: AccountLocation, table: string, day: string): Promise<string[]> {
    const db = checkDatabase(account);
    if (!/^(\d{4}-\d{2}-\d{2}|none)$/.test(day)) throw new Error(`invalid UTC day ${day}`);
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    if (!(await this.tableExists(db, table))) return [];
    const rows = await this.rows<{ key: string }>(keysOnQuery(db, table), { day });
    return rows.map((r) => r.key);
  }

  async dropAccount(account: AccountLocation): Promise<void> {
    const db = checkDatabase(account);
    await this.command(
      `DROP DATABASE IF EXISTS ${quoteName(db)}${this.layout.cluster ? ` ON CLUSTER ${quoteName(this.layout.cluster)}` : ''}`,
    );
    this.ready.delete(db);
    for (const key of [...this.streamColumns.keys()])
      if (key.startsWith(`${db}.`)) this.streamColumns.delete(key);
  }

  async close(): Promise<void> {
    await this.client.close();
  }

  /** A table's (or view's) columns and their ClickHouse types, in order; none when it does not exist. */
  private async columnsOf(
    db: string,
    table: string,
  ): Promise<{ name: string; type: string; comment: string }[]> {
    return this.rows<{ name: string; type: string; comment: string }>(
      `SELECT name, type, comment FROM system.columns WHERE database = {db:String} AND table = {table:String} ORDER BY position`,
      { db, table },
    );
  }

  /**
   * The table's rows as COPY text in batches of whole rows, one query per batch in key order
   * (after the last key of the batch before): no statement outlives its batch, however slowly
   * the importer takes them. Read with FINAL, users and groups from their folded views.
   */
  private async *exported(
    db: string,
    shape: TableShape,
    columns: readonly { name: string; type: string }[],
    batchRows: number,
  ): AsyncGenerator<RowBatch> {
    const types = new Map(columns.map((c) => [c.name, c.type]));
    const key = quoteName(keyColumnOf(shape.table));
    const select = shape.columns.map((c) => exportExpression(c.name, types.get(c.name))).join(', ');
    const keyAt = shape.columns.findIndex((c) => c.name === keyColumnOf(shape.table));
    let after: string | null = null;
    for (;;) {
      const rows: (string | null)[][] = await this.rows<(string | null)[]>(
        `SELECT ${select} FROM ${readFrom(db, shape.table)}
          WHERE {first:UInt8} = 1 OR ${key} > {after:String}
          ORDER BY ${key} LIMIT {limit:UInt64}`,
        { first: after === null ? 1 : 0, after: after ?? '', limit: batchRows },
        undefined,
        'JSONCompactEachRow',
      );
      if (rows.length === 0) return;
      yield { rows: rows.length, text: rows.map((r) => `${copyLine(r)}\n`).join('') };
      if (rows.length < batchRows) return;
      after = String((rows[rows.length - 1] as (string | null)[])[keyAt]);
    }
  }

  /** Creates the stream table when missing and adds the shape's columns it lacks; its columns' types. */
  private async prepareStreamTable(db: string, shape: TableShape, key: string): Promise<Map<string, string>> {
    const target = `${quoteName(db)}.${quoteName(shape.table)}`;
    await this.command(streamTableStatement(target));
    let types = new Map((await this.columnsOf(db, shape.table)).map((c) => [c.name, c.type]));
    const missing = shape.columns.filter((c) => c.name !== key && !types.has(c.name));
    if (missing.length > 0) {
      for (const column of missing)
        await this.command(
          `ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${quoteName(column.name)} ${streamColumnTypeOf(column.type)}${jsonComment(column.type)}`,
        );
      types = new Map((await this.columnsOf(db, shape.table)).map((c) => [c.name, c.type]));
      // The stream writer reads the columns again at its next write.
      this.streamColumns.delete(`${db}.${shape.table}`);
    }
    return types;
  }

  /** Stream rows merged by key: a row is written only when its sync is newer than the stored one. */
  private async importStream(
    db: string,
    shape: TableShape,
    key: string,
    types: ReadonlyMap<string, string>,
    rows: (string | null)[][],
  ): Promise<number> {
    const values = rows.map((fields) => {
      const byName = fieldsByName(shape, fields);
      const out: Record<string, unknown> = {};
      for (const [name, text] of byName) {
        if (name === streamKey && key !== streamKey) continue; // a field named id stays in _raw
        const column = name === key ? streamKey : name;
        const type = types.get(column);
        if (type === undefined) continue;
        out[column] = clickhouseValue(column, type, text);
      }
      return out;
    });
    const newest = new Map<string, Record<string, unknown>>();
    for (const row of values) {
      const id = String(row[streamKey]);
      const there = newest.get(id);
      if (!there || String(row._synced_at) > String(there._synced_at)) newest.set(id, row);
    }
    const stored = await this.rows<{ id: string; at: string }>(
      `SELECT id, toString(max(_synced_at)) AS at FROM ${quoteName(db)}.${quoteName(shape.table)}
        WHERE id IN ${keyList([...newest.keys()])} GROUP BY id`,
    );
    const storedAt = new Map(stored.map((r) => [r.id, r.at]));
    const fresh = [...newest.values()].filter((r) => {
      const at = storedAt.get(String(r[streamKey]));
      return at === undefined || String(r._synced_at) > at;
    });
    for (let i = 0; i < fresh.length; i += this.rowsPerInsert) {
      const chunk = fresh.slice(i, i + this.rowsPerInsert);
      await this.client.insert({
        table: `${quoteName(db)}.${quoteName(shape.table)}`,
        columns: Object.keys(chunk[0] as object) as [string, ...string[]],
        values: chunk,
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.settings, input_format_null_as_default: 0, async_insert: 0 },
      });
    }
    return fresh.length;
  }

  /** The rows of the chunk whose event is not stored yet, the first of each key in the chunk. */
  private async unstored(
    db: string,
    table: WarehouseTable,
    chunk: { row: Record<string, unknown>; values: Record<string, unknown> }[],
  ): Promise<{ row: Record<string, unknown>; values: Record<string, unknown> }[]> {
    const folded = foldedTables.has(table);
    const keyOf = (row: Record<string, unknown>) =>
      folded ? `${String(row[idColumn[table]])}\u0000${String(row.message_id)}` : String(row.message_id);
    const ids = [...new Set(chunk.map(({ row }) => String(row.message_id)))];
    const stored = await this.rows<{ k: string }>(
      folded
        ? `SELECT DISTINCT concat(${quoteName(idColumn[table])}, '\\0', message_id) AS k FROM ${quoteName(db)}.${quoteName(storedTableOf(table))} WHERE message_id IN ${keyList(ids.map(utf8Text))}`
        : `SELECT DISTINCT message_id AS k FROM ${quoteName(db)}.${quoteName(table)} WHERE message_id IN ${keyList(ids.map(utf8Text))}`,
    );
    const seen = new Set(stored.map((r) => r.k));
    const fresh: typeof chunk = [];
    for (const entry of chunk) {
      const key = utf8Text(keyOf(entry.row));
      if (seen.has(key)) continue;
      seen.add(key);
      fresh.push(entry);
    }
    return fresh;
  }

  private async migrate(db: string): Promise<void> {
    for (const statement of databaseStatements(db, this.layout)) await this.command(statement);
    const applied = new Set(
      (await this.rows<{ version: number }>(`SELECT version FROM ${quoteName(db)}._migrations FINAL`)).map(
        (r) => Number(r.version),
      ),
    );
    // DDL here is idempotent (IF NOT EXISTS, OR REPLACE): two processes migrating at once agree.
    for (const migration of clickhouseMigrations.filter((m) => !applied.has(m.version))) {
      for (const statement of migration.statements(db, this.layout)) await this.command(statement);
      await this.client.insert({
        table: `${quoteName(db)}._migrations`,
        columns: ['version'],
        values: [{ version: migration.version }],
        format: 'JSONEachRow',
      });
    }
  }

  private async ensureStreamColumns(
    db: string,
    schema: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<string[]> {
    const name = `${schema}.${table}`;
    const wanted = wantedColumns(primaryKey, records);
    const known = this.streamColumns.get(name);
    if (known && [...wanted.keys()].every((field) => known.has(field))) return [];
    const target = `${quoteName(db)}.${quoteName(table)}`;
    await this.command(streamTableStatement(target));
    const existing = await this.columnsOf(db, table);
    const columns = new Map(
      existing
        .filter((c) => !['id', '_raw', '_synced_at'].includes(c.name))
        .map((c): [string, ColumnType] => [
          c.name,
          c.comment === 'jsonb' ? 'jsonb' : columnTypeOfStored(c.type),
        ]),
    );
    const added: string[] = [];
    for (const [field, type] of wanted) {
      if (columns.has(field)) continue;
      await this.command(
        `ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${quoteName(field)} ${streamColumnType[type]}${jsonComment(type)}`,
      );
      columns.set(field, type);
      added.push(field);
    }
    this.streamColumns.set(name, columns);
    return added;
  }

  private async namedQuery(
    account: AccountLocation,
    name: ReadOnlyQueryName,
    params: ReadOnlyQueries[ReadOnlyQueryName]['params'],
    options: ReadOptions,
  ): Promise<unknown[]> {
    const db = quoteName(checkDatabase(account));
    const eventTime = `coalesce(timestamp, ${atText('received_at')})`;
    switch (name) {
      case 'existing_tables':
        return (await this.existingTables(account.schema)).map((table) => ({ table }));
      case 'has_rows': {
        const tables = await this.existingTables(account.schema);
        if (tables.length === 0) return [{ found: false }];
        const [row] = await this.metered<{ found: number }>(
          account,
          options,
          `SELECT ${tables.map((t) => `(SELECT count() > 0 FROM ${db}.${quoteName(storedTableOf(t))})`).join(' OR ')} AS found`,
        );
        return [{ found: Number(row?.found) === 1 }];
      }
      case 'event_names': {
        const { since } = params as ReadOnlyQueries['event_names']['params'];
        const rows = await this.metered<{
          type: string;
          name: string;
          count: string;
          first: string;
          last: string;
        }>(
          account,
          options,
          `SELECT type, if(type = 'page', coalesce(name, ''), coalesce(event, '')) AS name, toString(count()) AS count,
                  min(${eventTime}) AS first, max(${eventTime}) AS last
             FROM ${db}.events FINAL
            WHERE ${eventTime} > {since:String}
            GROUP BY type, name ORDER BY count() DESC, name`,
          { since: storedTime(since) },
        );
        return rows.map((r) => ({
          type: r.type,
          name: r.name,
          count: Number(r.count),
          firstSeen: new Date(r.first),
          lastSeen: new Date(r.last),
        }));
      }
      case 'event_property_types': {
        const { since } = params as ReadOnlyQueries['event_property_types']['params'];
        const rows = await this.metered<{
          type: string;
          event: string;
          property: string;
          json_type: string;
          count: string;
        }>(
          account,
          options,
          `SELECT type, if(type = 'page', coalesce(name, ''), coalesce(event, '')) AS event, kv.1 AS property,
                  multiIf(JSONType(kv.2) IN ('Int64', 'UInt64', 'Double'), 'number', JSONType(kv.2) = 'Bool', 'boolean',
                          JSONType(kv.2) = 'Null', 'null', JSONType(kv.2) = 'Array', 'array',
                          JSONType(kv.2) = 'Object', 'object', 'string') AS json_type,
                  toString(count()) AS count
             FROM ${db}.events FINAL
            ARRAY JOIN JSONExtractKeysAndValuesRaw(if(JSONType(ifNull(properties, 'null')) = 'Object', assumeNotNull(properties), '{}')) AS kv
            WHERE ${eventTime} > {since:String}
            GROUP BY type, event, property, json_type ORDER BY type, event, property, json_type`,
          { since: storedTime(since) },
        );
        return rows.map((r) => ({
          type: r.type,
          event: r.event,
          property: r.property,
          jsonType: r.json_type,
          count: Number(r.count),
        }));
      }
      case 'table_freshness': {
        const { table, now } = params as ReadOnlyQueries['table_freshness']['params'];
        if (!tableNames.includes(table)) throw new Error(`unknown warehouse table ${table}`);
        const rows = await this.metered<{
          rows: string;
          last_received: string | null;
          last_event: string | null;
          last_24h: string;
        }>(
          account,
          options,
          `SELECT toString(count()) AS rows, if(count() = 0, NULL, ${atText('max(received_at)')}) AS last_received,
                  max(timestamp) AS last_event,
                  toString(countIf(received_at > ${atParam('now')} - INTERVAL 24 HOUR)) AS last_24h
             FROM ${db}.${quoteName(table)}${foldedTables.has(table) ? '' : ' FINAL'}`,
          { now: now.toISOString() },
        );
        return rows.map((r) => ({
          rows: Number(r.rows),
          lastReceivedAt: r.last_received ? new Date(r.last_received) : null,
          lastEventAt: r.last_event ? new Date(r.last_event) : null,
          rowsLast24h: Number(r.last_24h),
        }));
      }
      case 'rows_received_on': {
        const { day } = params as ReadOnlyQueries['rows_received_on']['params'];
        if (!utcDay.test(day)) throw new Error(`invalid UTC day ${day}`);
        const tables = await this.existingTables(account.schema);
        if (tables.length === 0) return [{ rows: 0 }];
        const counts = tables.map(
          (t) =>
            `(SELECT count() FROM ${db}.${quoteName(t)}${foldedTables.has(t) ? '' : ' FINAL'} WHERE toDate(received_at, 'UTC') = toDate({day:String}))`,
        );
        const [row] = await this.metered<{ rows: string }>(
          account,
          options,
          `SELECT toString(${counts.join(' + ')}) AS rows`,
          { day },
        );
        return [{ rows: Number(row?.rows ?? 0) }];
      }
    }
  }

  private async existingTables(db: string): Promise<WarehouseTableName[]> {
    const rows = await this.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = {db:String} AND name IN {names:Array(String)}`,
      { db, names: tableNames },
    );
    const found = new Set(rows.map((r) => r.name));
    return tableNames.filter((t) => found.has(t));
  }

  private async tableExists(db: string, table: string): Promise<boolean> {
    const rows = await this.rows(
      'SELECT 1 AS one FROM system.tables WHERE database = {db:String} AND name = {table:String}',
      { db, table },
    );
    return rows.length > 0;
  }

  private async command(query: string): Promise<void> {
    await this.client.command({ query, clickhouse_settings: this.settings });
  }

  private async rows<R>(
    query: string,
    params: Record<string, unknown> = {},
    signal?: AbortSignal,
    format: 'JSONEachRow' | 'JSONCompactEachRow' = 'JSONEachRow',
  ): Promise<R[]> {
    const result = await this.client.query({
      query,
      query_params: params,
      format,
      clickhouse_settings: this.settings,
      ...(signal ? { abort_signal: signal } : {}),
    });
    return result.json<R>();
  }

  /**
   * A read of the account's tables, metered by the bytes the server read for it (its summary,
   * complete because the server answers only once the query has ended: wait_end_of_query).
   */
  private async metered<R>(
    account: AccountLocation,
    options: ReadOptions,
    query: string,
    params: Record<string, unknown> = {},
  ): Promise<R[]> {
    options.signal?.throwIfAborted();
    const result = await this.client.query({
      query,
      query_params: params,
      format: 'JSONEachRow',
      clickhouse_settings: { ...this.settings, readonly: '1', wait_end_of_query: 1 },
      ...(options.signal ? { abort_signal: options.signal } : {}),
    });
    const rows = await result.json<R>();
    await this.record(
      account.accountId,
      options.purpose,
      Number(summaryOf(result.response_headers).read_bytes ?? 0),
    );
    return rows;
  }

  private async record(accountId: string, purpose: ReadOptions['purpose'], bytes: number): Promise<void> {
    const whole = Number.isFinite(bytes) ? Math.max(0, Math.round(bytes)) : 0;
    if (whole > 0 && this.meter) await this.meter(accountId, purpose, whole);
  }

  /**
   * The change query's rows in batches, from one query: one scan and sort however many
   * batches. The server answers once the query has ended (wait_end_of_query), so its summary,
   * the bytes metered, is whole; the rows then stream as the caller takes them.
   */
  private async *batches(
    account: AccountLocation,
    query: ChangeQuery,
    options: ReadOptions & { batchRows: number },
  ): AsyncGenerator<ChangedRow[]> {
    const batchRows = Math.max(1, Math.floor(options.batchRows));
    options.signal?.throwIfAborted();
    const result = await this.client.query({
      query: query.sql,
      query_params: query.params,
      format: 'JSONEachRow',
      clickhouse_settings: { ...this.settings, readonly: '1', wait_end_of_query: 1 },
      ...(options.signal ? { abort_signal: options.signal } : {}),
    });
    const bytes = Number(summaryOf(result.response_headers).read_bytes ?? 0);
    const stream = result.stream<Record<string, unknown>>();
    try {
      let pending: ChangedRow[] = [];
      for await (const chunk of stream) {
        for (const row of chunk) {
          pending.push(query.toChange(row.json()));
          if (pending.length >= batchRows) {
            yield pending;
            pending = [];
          }
        }
      }
      if (pending.length > 0) yield pending;
    } finally {
      stream.destroy();
      await this.record(account.accountId, options.purpose, bytes);
    }
  }
}

/** A stream column holding JSON is text marked by its comment, so a move out of ClickHouse types it jsonb again. */
const jsonComment = (type: string) => (type === 'jsonb' ? ` COMMENT 'jsonb'` : '');

/** A source stream's table: its key, the record, when it was synced; typed columns are added. */
const streamTableStatement = (target: string) =>
  `CREATE TABLE IF NOT EXISTS ${target} (id String, _raw String, _synced_at DateTime64(6, 'UTC')) ENGINE = ReplacingMergeTree(_synced_at) ORDER BY id`;

const isWarehouseTable = (table: string): table is WarehouseTable =>
  (tableNames as readonly string[]).includes(table);

function firstPerKey<T>(rows: readonly T[], keyOf: (row: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const row of rows) if (!seen.has(keyOf(row))) seen.set(keyOf(row), row);
  return [...seen.values()];
}

/**
 * Whether a row to import equals the stored one of the same key: every column the import
 * writes, JSON compared by value (the engines spell it differently), the rest by its text.
 */
function sameStoredRow(
  row: Readonly<Record<string, unknown>>,
  stored: Readonly<Record<string, unknown>>,
  json: ReadonlySet<string>,
): boolean {
  return Object.keys(row).every((column) => {
    const a = row[column];
    const b = stored[column];
    if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
    if (json.has(column) || column === '_trait_orders')
      return canonicalJson(String(a)) === canonicalJson(String(b));
    return String(a) === String(b);
  });
}

function checkDatabase(account: AccountLocation): string {
  if (!isClickHouseDatabaseName(account.schema))
    throw new Error(`invalid warehouse database name ${account.schema}`);
  return account.schema;
}

/**
 * The name of one insert: the rows' topic, partition and positions, and the table. The same
 * rows read again from the same place give the same name, and the server drops the insert.
 */
export function insertToken(origin: WriteOrigin, table: string, positions: readonly string[]): string {
  const hash = createHash('sha256').update(positions.join(',')).digest('hex').slice(0, 32);
  return `${origin.topic}/${origin.partition}/${table}/${positions.length}/${hash}`;
}
