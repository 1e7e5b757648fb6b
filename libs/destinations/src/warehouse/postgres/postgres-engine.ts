import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { warehouseConnectionPool, type GuardOptions } from '@pipeline/postgres';
import type { WarehouseRow } from '@pipeline/events';
import type { WarehouseConnection } from '@pipeline/tenancy';
import { quoteIdent } from './warehouse-ddl';
import type {
  AccountLocation,
  ChangedRow,
  ChangeRequest,
  ReadOnlyQueries,
  ReadOnlyQueryName,
  ReadOptions,
  ReadPurpose,
  RowBatch,
  StreamWriteResult,
  SubjectErasure,
  SubjectIds,
  SubjectRowCounts,
  TableDay,
  TableExport,
  TableShape,
  WarehouseEngine,
  WarehouseErrorClass,
  WarehouseTableName,
  WriteResult,
} from '../warehouse-engine';
import { warehouseErrorKind } from '../warehouse-errors';
import {
  beginStatement,
  inWarehouseTransaction,
  withTransactionLock,
  type WarehouseTimeouts,
} from '../warehouse-pool';
import {
  checkedShape,
  copyLines,
  createStreamTableStatements,
  daysStatement,
  exportStatement,
  keysOnStatement,
  mergeStatement,
  stageCopyStatement,
  stageStatement,
  warehouseTableNames,
} from './table-copy';
import { defaultRowsPerCopy, WarehouseWriter } from './warehouse-writer';
import { StreamTableWriter } from './stream-table-writer';
import { isPlainIdentifier } from '../stream-table-columns';
import { saneStorageBytes } from '../storage-bytes';
import { PostgresSubjectErasure } from './subject-erasure';
import { trafficNamesStatement, trafficProfileStatement, trafficRowsStatement } from './traffic-queries';

/**
 * The settings of an engine's pool; a `connect` hook builds the pool from them. No time limits:
 * as startup parameters PgBouncer refuses them, and in its transaction mode a session setting
 * would not follow the client; every transaction sets its own (SET LOCAL).
 */
export interface WarehousePoolSettings {
  max: number;
  idleTimeoutMillis: number;
  connectionTimeoutMillis: number;
  /** A customer's connection silent this long is closed by us (GuardOptions.readDeadlineMs). */
  readDeadlineMs: number;
}

/** Builds an engine's pool (a guarded pool for a customer's server checks every address it connects to). */
export type WarehousePoolFactory = (connection: WarehouseConnection, settings: WarehousePoolSettings) => Pool;

/** Adds bytes an account's read processed to its usage. */
export type WarehouseQueryMeter = (accountId: string, purpose: ReadPurpose, bytes: number) => Promise<void>;

export interface PostgresEngineOptions {
  timeouts: WarehouseTimeouts;
  /** Connections this engine's pool opens at most. */
  poolMax: number;
  /** A connection unused this long is closed. */
  idleTimeoutMs: number;
  rowsPerCopy?: number;
  meter?: WarehouseQueryMeter;
  connect?: WarehousePoolFactory;
}

const connectTimeoutMs = 5000;
const readDeadlineGraceMs = 5000;

/**
 * Pools built by @pipeline/postgres's warehouseConnectionPool: every field set, never a URL, and
 * for a customer's server every connect checked against the egress policy (`guard`: the
 * operator's EGRESS_ALLOW_PRIVATE_RANGES; none by default, so a private address is refused).
 */
export const guardedWarehousePools =
  (guard: GuardOptions = {}): WarehousePoolFactory =>
  (connection, settings) =>
    warehouseConnectionPool(connection, {
      ...guard,
      max: settings.max,
      idleTimeoutMs: settings.idleTimeoutMillis,
      connectTimeoutMs: settings.connectionTimeoutMillis,
      readDeadlineMs: settings.readDeadlineMs,
    });

const tableNames: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];
const utcDay = /^\d{4}-\d{2}-\d{2}$/;
/** A timestamp as ISO text with microseconds: a watermark must not lose what a JS Date would. */
const atText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

function checkSchema(account: AccountLocation): string {
  if (!isPlainIdentifier(account.schema)) throw new Error(`invalid warehouse schema name ${account.schema}`);
  return quoteIdent(account.schema);
}

function checkTable(table: string): WarehouseTableName {
  if (!tableNames.includes(table as WarehouseTableName)) throw new Error(`unknown warehouse table ${table}`);
  return table as WarehouseTableName;
}

interface ChangeQuery {
  table: string;
  sql: string;
  values: unknown[];
  toChange: (row: Record<string, unknown>) => ChangedRow;
}

/**
 * The SQL of a change stream: rows after the watermark in (change time, key) order, the change
 * time as microsecond text so the next watermark is exact.
 */
function changeQuery(schema: string, request: ChangeRequest): ChangeQuery {
  const { at, key } = request.since;
  if (request.kind === 'users') {
    return {
      table: 'users',
      sql: `SELECT user_id, anonymous_id, traits, ${atText('received_at')} AS at
              FROM ${schema}."users"
             WHERE user_id IS NOT NULL AND (received_at, user_id) > ($1::timestamptz, $2)
             ORDER BY received_at, user_id`,
      values: [at, key],
      toChange: ({ at: rowAt, ...row }) => ({ at: String(rowAt), key: String(row.user_id), row }),
    };
  }
  if (request.kind === 'events') {
    return {
      table: 'events',
      sql: `SELECT message_id, type, event, name, properties, anonymous_id, user_id,
                   ${atText('timestamp')} AS timestamp, ${atText('received_at')} AS at
              FROM ${schema}."events"
             WHERE received_at >= $3 AND (received_at, message_id) > ($1::timestamptz, $2)
               AND ($4::text[] IS NULL OR COALESCE(event, name) = ANY($4))
             ORDER BY received_at, message_id`,
      values: [at, key, request.receivedSince, request.names],
      toChange: ({ at: rowAt, ...row }) => ({ at: String(rowAt), key: String(row.message_id), row }),
    };
  }
  if (!isPlainIdentifier(request.table)) throw new Error(`invalid stream table name ${request.table}`);
  return {
    table: request.table,
    sql: `SELECT id AS key, _raw AS raw, ${atText('_synced_at')} AS at FROM ${schema}.${quoteIdent(request.table)}
           WHERE (_synced_at, id) > ($1::timestamptz, $2)
           ORDER BY _synced_at, id`,
    values: [at, key],
    toChange: (row) => ({
      at: String(row.at),
      key: String(row.key),
      row: row.raw as Record<string, unknown>,
    }),
  };
}

/**
 * The PostgreSQL warehouse engine: one pool per warehouse, shared by the row writer, the stream
 * table writer and the reads. Reads run in read-only transactions and are metered by the
 * blocks of the account's schema they fetched; an abort cancels the statement on the server.
 */
export class PostgresEngine implements WarehouseEngine {
  readonly engine = 'postgres' as const;
  private readonly pool: Pool;
  private readonly rows: WarehouseWriter;
  private readonly streams: StreamTableWriter;
  private readonly meter: WarehouseQueryMeter | undefined;
  /** Opens a read: read-only, with the warehouse's time limits for this transaction alone. */
  private readonly readOnlyBegin: string;
  private readonly timeouts: WarehouseTimeouts;
  /** Tables an import created or found, per `schema.table`: checked once per process. */
  private readonly prepared = new Map<string, Promise<void>>();
  private readonly subjects: PostgresSubjectErasure;

  // The connection (its password) is not kept: only the pool holds it.
  constructor(connection: WarehouseConnection, options: PostgresEngineOptions) {
    const connect = options.connect ?? guardedWarehousePools();
    this.pool = connect(connection, {
      max: options.poolMax,
      idleTimeoutMillis: options.idleTimeoutMs,
      connectionTimeoutMillis: connectTimeoutMs,
      // The server's own statement_timeout ends a statement first; this ends one it refused to.
      readDeadlineMs: options.timeouts.statementTimeoutMs + readDeadlineGraceMs,
    });
    // An idle client's error (server restart) must not crash the process; the next query reconnects.
    this.pool.on('error', () => undefined);
    this.rows = new WarehouseWriter(this.pool, {
      timeouts: options.timeouts,
      rowsPerCopy: options.rowsPerCopy ?? defaultRowsPerCopy,
    });
    this.streams = new StreamTableWriter(this.pool, { timeouts: options.timeouts });
    this.meter = options.meter;
    // search_path pinned for the transaction: a customer's server can set its role's path to a
    // schema whose functions shadow pg_catalog's (storage metered negative, bytes read forged).
    this.readOnlyBegin = `${beginStatement(options.timeouts)}; SET TRANSACTION READ ONLY; SET LOCAL search_path = pg_catalog, pg_temp`;
    this.timeouts = options.timeouts;
    this.subjects = new PostgresSubjectErasure(
      this.pool,
      options.timeouts,
      (client, signal, run) => this.cancellable(client, signal, run),
      (schema) => this.rows.ensureSchema(schema),
    );
  }

  async ensureAccount(account: AccountLocation): Promise<void> {
    await this.rows.ensureSchema(account.schema);
  }

  writeRows(account: AccountLocation, rows: readonly WarehouseRow[]): Promise<WriteResult> {
    return this.rows.write(account.schema, rows);
  }

  writeStream(
    account: AccountLocation,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    return this.streams.write(account.schema, table, primaryKey, records);
  }

  async readChanges(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null> {
    const query = changeQuery(checkSchema(account), request);
    if (!(await this.tableExists(account.schema, query.table))) return null;
    return this.batches(account, query, options);
  }

  async query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]> {
    const rows = await this.namedQuery(account, name, params, options);
    return rows as ReadOnlyQueries[K]['row'][];
  }

  async storageBytes(account: AccountLocation): Promise<number> {
    const [row] = await this.metered<{ bytes: string }>(
      account,
      { purpose: 'query' },
      // Schema-qualified as well as under the pinned search_path (readOnlyBegin): the server's
      // own role settings may put a schema with a look-alike function first.
      `SELECT COALESCE(pg_catalog.sum(pg_catalog.pg_total_relation_size(c.oid)), 0) AS bytes
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname OPERATOR(pg_catalog.=) $1 AND c.relkind IN ('r', 'p', 'm')`,
      [account.schema],
    );
    return saneStorageBytes(row?.bytes);
  }

  async probe(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  classifyError(error: unknown): WarehouseErrorClass {
    return warehouseErrorKind(error);
  }

  async accountTables(account: AccountLocation): Promise<string[]> {
    checkSchema(account);
    const { rows } = await this.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND c.relname <> '_migrations'
        ORDER BY 1`,
      [account.schema],
    );
    // The warehouse tables first: a stream table created on the target migrates the schema anyway.
    const names = rows.map((r) => r.name).filter(isPlainIdentifier);
    const warehouse = warehouseTableNames.filter((t) => names.includes(t));
    return [...warehouse, ...names.filter((n) => !(warehouseTableNames as readonly string[]).includes(n))];
  }

  async exportTable(
    account: AccountLocation,
    table: string,
    options: { batchRows: number },
  ): Promise<TableExport | null> {
    const shape = await this.shapeOf(account, table);
    if (!shape) return null;
    return { shape, batches: this.exported(account, shape, Math.max(1, Math.floor(options.batchRows))) };
  }

  async importRows(account: AccountLocation, shape: TableShape, batch: RowBatch): Promise<number> {
    checkSchema(account);
    checkedShape(shape);
    await this.prepareTable(account, shape);
    if (batch.rows === 0) return 0;
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      return await inWarehouseTransaction(client, this.timeouts, async () => {
        await client.query(stageStatement(account.schema, shape));
        const copy = copyFrom(stageCopyStatement(shape));
        // As the row writer's COPY: a callback of its own, so tracing ends the COPY's span.
        const own = copy as typeof copy & { callback: () => void };
        own.callback = own.callback.bind(copy);
        await pipeline(Readable.from([batch.text]), client.query(copy));
        const merged = await client.query(mergeStatement(account.schema, shape));
        return merged.rowCount ?? 0;
      });
    } catch (error) {
      if (this.classifyError(error) === 'unavailable') broken = error as Error;
      throw error;
    } finally {
      client.release(broken);
    }
  }

  async tableDays(account: AccountLocation, table: string): Promise<TableDay[]> {
    const shape = await this.shapeOf(account, table);
    if (!shape) return [];
    const { rows } = await this.pool.query<{ day: string; rows: string; hash: string }>(
      daysStatement(account.schema, shape),
    );
    return rows.map((r) => ({ day: r.day, rows: Number(r.rows), hash: r.hash }));
  }

  async tableKeysOn(account: AccountLocation, table: string, day: string): Promise<string[]> {
    if (!/^(\d{4}-\d{2}-\d{2}|none)$/.test(day)) throw new Error(`invalid UTC day ${day}`);
    const shape = await this.shapeOf(account, table);
    if (!shape) return [];
    const { rows } = await this.pool.query<{ key: string }>(keysOnStatement(account.schema, shape), [day]);
    return rows.map((r) => r.key);
  }

  async countSubjectRows(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { signal?: AbortSignal } = {},
  ): Promise<SubjectRowCounts> {
    checkSchema(account);
    return this.subjects.count(account, subjects, options.signal);
  }

  async subjectEmails(account: AccountLocation, subjects: SubjectIds): Promise<string[]> {
    checkSchema(account);
    return this.subjects.emails(account, subjects);
  }

  async eraseSubjects(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure> {
    checkSchema(account);
    return this.subjects.erase(account, subjects, options);
  }

  async purgeErased(account: AccountLocation): Promise<void> {
    checkSchema(account);
    await this.subjects.purge(account);
  }

  async dropAccount(account: AccountLocation): Promise<void> {
    const schema = checkSchema(account);
    await withTransactionLock(this.pool, this.timeouts, `warehouse:${account.schema}`, async (client) => {
      await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    });
    this.rows.forget(account.schema);
    this.streams.forget(account.schema);
    for (const key of [...this.prepared.keys()])
      if (key.startsWith(`${account.schema}.`)) this.prepared.delete(key);
  }

  async close(): Promise<void> {
    await this.rows.close();
    await this.streams.close();
    await this.pool.end();
  }

  private async namedQuery(
    account: AccountLocation,
    name: ReadOnlyQueryName,
    params: ReadOnlyQueries[ReadOnlyQueryName]['params'],
    options: ReadOptions,
  ): Promise<unknown[]> {
    const schema = checkSchema(account);
    switch (name) {
      case 'existing_tables':
        return (await this.existingTables(account.schema)).map((table) => ({ table }));
      case 'has_rows': {
        const tables = await this.existingTables(account.schema);
        if (tables.length === 0) return [{ found: false }];
        const [row] = await this.metered<{ found: boolean }>(
          account,
          options,
          `SELECT ${tables.map((t) => `EXISTS (SELECT 1 FROM ${schema}.${quoteIdent(t)})`).join(' OR ')} AS found`,
        );
        return [{ found: row?.found === true }];
      }
      case 'event_names': {
        const { since } = params as ReadOnlyQueries['event_names']['params'];
        const rows = await this.metered<{
          type: string;
          name: string;
          count: string;
          first_seen: Date;
          last_seen: Date;
        }>(
          account,
          options,
          `SELECT type, COALESCE(CASE WHEN type = 'page' THEN name ELSE event END, '') AS name,
                  count(*) AS count, min(COALESCE(timestamp, received_at)) AS first_seen,
                  max(COALESCE(timestamp, received_at)) AS last_seen
             FROM ${schema}."events"
            WHERE COALESCE(timestamp, received_at) > $1
            GROUP BY 1, 2 ORDER BY count(*) DESC, 2`,
          [since],
        );
        return rows.map((r) => ({
          type: r.type,
          name: r.name,
          count: Number(r.count),
          firstSeen: r.first_seen,
          lastSeen: r.last_seen,
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
          `SELECT e.type, COALESCE(CASE WHEN e.type = 'page' THEN e.name ELSE e.event END, '') AS event,
                  p.key AS property, jsonb_typeof(p.value) AS json_type, count(*) AS count
             FROM ${schema}."events" e
            CROSS JOIN LATERAL jsonb_each(CASE WHEN jsonb_typeof(e.properties) = 'object' THEN e.properties ELSE '{}'::jsonb END) p
            WHERE COALESCE(e.timestamp, e.received_at) > $1
            GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
          [since],
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
        const rows = await this.metered<{
          rows: string;
          last_received_at: Date | null;
          last_event_at: Date | null;
          rows_last_24h: string;
        }>(
          account,
          options,
          `SELECT count(*) AS rows, max(received_at) AS last_received_at, max(timestamp) AS last_event_at,
                  count(*) FILTER (WHERE received_at > $1::timestamptz - interval '24 hours') AS rows_last_24h
             FROM ${schema}.${quoteIdent(checkTable(table))}`,
          [now],
        );
        return rows.map((r) => ({
          rows: Number(r.rows),
          lastReceivedAt: r.last_received_at,
          lastEventAt: r.last_event_at,
          rowsLast24h: Number(r.rows_last_24h),
        }));
      }
      case 'traffic_names': {
        const window = params as ReadOnlyQueries['traffic_names']['params'];
        if (!(await this.tableExists(account.schema, checkTable(window.table)))) return [];
        const { sql, values } = trafficNamesStatement(schema, window);
        const rows = await this.metered<{
          type: string;
          name: string | null;
          count: string;
          first_seen: Date;
          last_seen: Date;
          distinct_names: string;
        }>(account, options, sql, values);
        return rows.map((r) => ({
          type: r.type,
          name: r.name,
          count: Number(r.count),
          firstSeen: r.first_seen,
          lastSeen: r.last_seen,
          distinctNames: Number(r.distinct_names),
        }));
      }
      case 'traffic_profile': {
        const window = params as ReadOnlyQueries['traffic_profile']['params'];
        if (!(await this.tableExists(account.schema, checkTable(window.table)))) return [];
        const { sql, values } = trafficProfileStatement(schema, window);
        const rows = await this.metered<{
          type: string;
          name: string | null;
          property: string;
          json_type: string;
          count: string;
          strings: string[] | null;
        }>(account, options, sql, values);
        return rows.map((r) => ({
          type: r.type,
          name: r.name,
          property: r.property,
          jsonType: r.json_type,
          count: Number(r.count),
          strings: r.strings,
        }));
      }
      case 'traffic_rows': {
        const window = params as ReadOnlyQueries['traffic_rows']['params'];
        if (!(await this.tableExists(account.schema, checkTable(window.table)))) return [];
        const { sql, values } = trafficRowsStatement(schema, window);
        return this.metered<{ row: Record<string, unknown> }>(account, options, sql, values);
      }
      case 'rows_received_on': {
        const { day } = params as ReadOnlyQueries['rows_received_on']['params'];
        if (!utcDay.test(day)) throw new Error(`invalid UTC day ${day}`);
        const tables = await this.existingTables(account.schema);
        if (tables.length === 0) return [{ rows: 0 }];
        // Day bounds in UTC whatever the session's TimeZone.
        const counts = tables.map(
          (table) =>
            `(SELECT count(*) FROM ${schema}.${quoteIdent(table)}
               WHERE received_at >= $1::date::timestamp AT TIME ZONE 'UTC'
                 AND received_at < ($1::date + 1)::timestamp AT TIME ZONE 'UTC')`,
        );
        const [row] = await this.metered<{ rows: string }>(
          account,
          options,
          `SELECT ${counts.join(' + ')} AS rows`,
          [day],
        );
        return [{ rows: Number(row?.rows ?? 0) }];
      }
    }
  }

  /** A table's columns (as format_type writes their types) and primary key; null when missing. */
  private async shapeOf(account: AccountLocation, table: string): Promise<TableShape | null> {
    const schema = checkSchema(account);
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    const relation = `${schema}.${quoteIdent(table)}`;
    const { rows: columns } = await this.pool.query<{ name: string; type: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
         FROM pg_attribute a
        WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum`,
      [relation],
    );
    if (columns.length === 0) return null;
    const { rows: keys } = await this.pool.query<{ name: string }>(
      `SELECT a.attname AS name
         FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey::int2[])
        WHERE i.indrelid = to_regclass($1) AND i.indisprimary
        ORDER BY array_position(i.indkey::int2[], a.attnum)`,
      [relation],
    );
    const kind = (warehouseTableNames as readonly string[]).includes(table)
      ? (table as WarehouseTableName)
      : 'stream';
    return checkedShape({ table, kind, columns, key: keys.map((k) => k.name) });
  }

  /** Creates the table an import writes into when missing (a stream table as the source had it). */
  private prepareTable(account: AccountLocation, shape: TableShape): Promise<void> {
    const name = `${account.schema}.${shape.table}`;
    let pending = this.prepared.get(name);
    if (!pending) {
      pending = (async () => {
        await this.rows.ensureSchema(account.schema);
        if (shape.kind !== 'stream') return;
        await withTransactionLock(this.pool, this.timeouts, `warehouse:${account.schema}`, async (client) => {
          for (const statement of createStreamTableStatements(account.schema, shape))
            await client.query(statement);
        });
      })().catch((error: unknown) => {
        this.prepared.delete(name);
        throw error;
      });
      this.prepared.set(name, pending);
    }
    return pending;
  }

  /**
   * The table's COPY text cut into batches of whole rows, in one read-only transaction without
   * a statement time limit: the export lasts as long as the importer takes with its batches.
   * A connection broken off mid-COPY is not given back to the pool.
   */
  private async *exported(
    account: AccountLocation,
    shape: TableShape,
    batchRows: number,
  ): AsyncGenerator<RowBatch> {
    const client = await this.pool.connect();
    let broken: Error | undefined = new Error('export broken off');
    try {
      await client.query('BEGIN READ ONLY; SET LOCAL statement_timeout = 0');
      const stream = client.query(copyTo(exportStatement(account.schema, shape)));
      const decoder = new StringDecoder('utf8');
      let pending: string[] = [];
      let partial = '';
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        const lines = (partial + decoder.write(chunk)).split('\n');
        partial = lines.pop() ?? '';
        pending.push(...lines);
        while (pending.length >= batchRows) {
          const rows = pending.slice(0, batchRows);
          pending = pending.slice(batchRows);
          yield { rows: rows.length, text: `${rows.join('\n')}\n` };
        }
      }
      const rest = copyLines(partial + decoder.end());
      pending.push(...rest);
      if (pending.length > 0) yield { rows: pending.length, text: `${pending.join('\n')}\n` };
      await client.query('COMMIT');
      broken = undefined;
    } finally {
      client.release(broken);
    }
  }

  /** The account's warehouse tables that exist, in the order of tableNames. */
  private async existingTables(schema: string): Promise<WarehouseTableName[]> {
    const { rows } = await this.pool.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = ANY($2)',
      [schema, tableNames],
    );
    const found = new Set(rows.map((r) => r.table_name));
    return tableNames.filter((t) => found.has(t));
  }

  private async tableExists(schema: string, table: string): Promise<boolean> {
    const { rows } = await this.pool.query(
      'SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2',
      [schema, table],
    );
    return rows.length > 0;
  }

  /**
   * Bytes of the schema's tables and indexes read through this backend's pending statistics.
   * PostgreSQL flushes those at most once a second outside a transaction, so they can carry
   * earlier transactions' reads: callers take the difference across their own transaction.
   */
  private async bytesFetched(client: PoolClient, schema: string): Promise<number> {
    const { rows } = await client.query<{ bytes: string }>(
      `SELECT COALESCE(pg_catalog.sum(pg_catalog.pg_stat_get_xact_blocks_fetched(c.oid)), 0)
              * pg_catalog.current_setting('block_size')::bigint AS bytes
         FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname OPERATOR(pg_catalog.=) $1`,
      [schema],
    );
    return Number(rows[0]?.bytes ?? 0);
  }

  /** Runs `run` on the client; an abort of the signal cancels its statement on the server. */
  private async cancellable<T>(client: PoolClient, signal: AbortSignal | undefined, run: () => Promise<T>) {
    if (!signal) return run();
    signal.throwIfAborted();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_catalog.pg_backend_pid() AS pid');
    const pid = rows[0]?.pid;
    const cancel = () => {
      void this.pool.query('SELECT pg_catalog.pg_cancel_backend($1)', [pid]).catch(() => undefined);
    };
    signal.addEventListener('abort', cancel, { once: true });
    try {
      return await run();
    } finally {
      signal.removeEventListener('abort', cancel);
    }
  }

  private async record(accountId: string, purpose: ReadPurpose, bytes: number): Promise<void> {
    // Whole bytes, never negative: statistics flushed mid-query can shrink a difference.
    const whole = Math.max(0, Math.round(bytes));
    if (whole > 0 && this.meter) await this.meter(accountId, purpose, whole);
  }

  /**
   * Runs a query over the account's schema in one read-only transaction and meters the bytes it
   * processed: the growth of PostgreSQL's block counters (pg_stat_get_xact_blocks_fetched:
   * every block of the schema's tables and indexes the query asked the buffer manager for,
   * from cache or disk) times the block size. Measured, not estimated from row counts.
   */
  private async metered<R extends QueryResultRow>(
    account: AccountLocation,
    options: ReadOptions,
    sql: string,
    values: unknown[] = [],
  ): Promise<R[]> {
    options.signal?.throwIfAborted();
    const client = await this.pool.connect();
    let bytes = 0;
    try {
      await client.query(this.readOnlyBegin);
      try {
        const before = await this.bytesFetched(client, account.schema);
        const result = await this.cancellable(client, options.signal, () => client.query<R>(sql, values));
        bytes = (await this.bytesFetched(client, account.schema)) - before;
        await client.query('COMMIT');
        return result.rows;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    } finally {
      client.release();
      await this.record(account.accountId, options.purpose, bytes);
    }
  }

  /**
   * Streams the change query in batches through a cursor in one read-only transaction: one scan
   * and sort however many batches, where keyset pages would rescan the table per page. The
   * transaction stays open while the caller handles a batch; its bytes are metered when the
   * iteration ends, broken off or failed. Nothing is connected before the first batch is asked.
   */
  private async *batches(
    account: AccountLocation,
    query: ChangeQuery,
    options: ReadOptions & { batchRows: number },
  ): AsyncGenerator<ChangedRow[]> {
    const { signal } = options;
    const fetchRows = Math.max(1, Math.floor(options.batchRows));
    signal?.throwIfAborted();
    const client = await this.pool.connect();
    let bytes = 0;
    let before = 0;
    let open = false;
    try {
      await client.query(this.readOnlyBegin);
      open = true;
      before = await this.bytesFetched(client, account.schema);
      await this.cancellable(client, signal, () =>
        client.query(`DECLARE changes NO SCROLL CURSOR FOR ${query.sql}`, query.values),
      );
      for (;;) {
        const { rows } = await this.cancellable(client, signal, () =>
          client.query<Record<string, unknown>>(`FETCH FORWARD ${fetchRows} FROM changes`),
        );
        if (rows.length === 0) break;
        yield rows.map(query.toChange);
        if (rows.length < fetchRows) break;
      }
    } finally {
      if (open) {
        try {
          bytes = (await this.bytesFetched(client, account.schema)) - before;
          await client.query('COMMIT');
        } catch {
          await client.query('ROLLBACK').catch(() => undefined);
        }
      }
      client.release();
      await this.record(account.accountId, options.purpose, bytes);
    }
  }
}
