import type { WarehouseRow } from '@pipeline/events';
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
  SubjectErasure,
  SubjectIds,
  SubjectRowCounts,
  TableDay,
  TableExport,
  TableShape,
  WarehouseEngine,
  WarehouseErrorClass,
  WriteOrigin,
  WriteResult,
} from '../warehouse-engine';
import type { WarehouseQueryMeter } from '../postgres/postgres-engine';
import type { WarehouseTimeouts } from '../warehouse-pool';
import { isPlainIdentifier } from '../stream-table-columns';
import { saneStorageBytes } from '../storage-bytes';
import {
  clickhouseMigrations,
  databaseStatements,
  quoteName,
  storedTableOf,
  type ClickHouseLayout,
} from './clickhouse-ddl';
import { clickhouseErrorKind } from './clickhouse-errors';
import { ClickHouseChanges } from './clickhouse-changes';
import { ClickHouseQueries } from './clickhouse-queries';
import { ClickHouseRowWriter } from './clickhouse-row-writer';
import {
  checkDatabase,
  ClickHouseServer,
  directClickHouseClient,
  tableNames,
  type ClickHouseClientFactory,
} from './clickhouse-server';
import { ClickHouseStreamWriter } from './clickhouse-stream-writer';
import { ClickHouseSubjectErasure, subjectIdsTable } from './clickhouse-subject-erasure';
import { ClickHouseTableMover } from './clickhouse-table-mover';
import { checkedShape } from '../postgres/table-copy';

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
 * The ClickHouse warehouse engine: one HTTP client per warehouse. Each account is a database;
 * events and aliases are ReplacingMergeTree tables keyed by message id, users and groups are
 * every event that set them plus a view that folds them as PostgreSQL's upsert does (see
 * clickhouse-ddl.ts). Inserts are synchronous and named by an insert_deduplication_token from
 * the rows' Kafka origin, so a redelivered batch adds nothing; reads that must be exact read
 * with FINAL. Reads are metered by the bytes the server says it read (X-ClickHouse-Summary).
 * The client is shared by the parts it is composed of: the row writer, the stream table writer,
 * the change reader, the named queries and a move's table export and import.
 */
export class ClickHouseEngine implements WarehouseEngine {
  readonly engine = 'clickhouse' as const;
  private readonly server: ClickHouseServer;
  private readonly layout: ClickHouseLayout;
  private readonly rows: ClickHouseRowWriter;
  private readonly streams: ClickHouseStreamWriter;
  private readonly changes: ClickHouseChanges;
  private readonly queries: ClickHouseQueries;
  private readonly tables: ClickHouseTableMover;
  private readonly subjects: ClickHouseSubjectErasure;
  private readonly ready = new Map<string, Promise<void>>();

  constructor(connection: WarehouseConnection, options: ClickHouseEngineOptions) {
    const connect = options.connect ?? directClickHouseClient;
    const client = connect(connection, {
      maxOpenConnections: options.poolMax,
      // The server ends a statement at max_execution_time; the client waits a little longer.
      requestTimeoutMs: options.timeouts.statementTimeoutMs + 5_000,
      idleSocketTtlMs: Math.min(options.idleTimeoutMs, 2_500),
    });
    this.layout = options.cluster ? { cluster: options.cluster } : {};
    const rowsPerInsert = options.rowsPerInsert ?? 10_000;
    this.server = new ClickHouseServer(
      client,
      { max_execution_time: Math.max(1, Math.ceil(options.timeouts.statementTimeoutMs / 1000)) },
      options.meter,
    );
    this.rows = new ClickHouseRowWriter(this.server, rowsPerInsert);
    this.streams = new ClickHouseStreamWriter(this.server, rowsPerInsert);
    this.changes = new ClickHouseChanges(this.server);
    this.queries = new ClickHouseQueries(this.server);
    this.tables = new ClickHouseTableMover(this.server, this.streams, rowsPerInsert);
    this.subjects = new ClickHouseSubjectErasure(this.server, this.layout);
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
    return this.rows.write(db, rows, origin);
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
    return this.streams.write(db, table, primaryKey, records);
  }

  readChanges(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null> {
    return this.changes.read(account, request, options);
  }

  query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]> {
    return this.queries.query(account, name, params, options);
  }

  async storageBytes(account: AccountLocation): Promise<number> {
    checkDatabase(account);
    const [row] = await this.server.rows<{ bytes: string }>(
      `SELECT toString(sum(bytes_on_disk)) AS bytes FROM system.parts WHERE database = {db:String} AND active`,
      { db: account.schema },
    );
    return saneStorageBytes(row?.bytes);
  }

  async probe(): Promise<void> {
    await this.server.rows('SELECT 1 AS one');
  }

  classifyError(error: unknown): WarehouseErrorClass {
    return clickhouseErrorKind(error);
  }

  async accountTables(account: AccountLocation): Promise<string[]> {
    checkDatabase(account);
    const rows = await this.server.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = {db:String} AND name != '_migrations' ORDER BY name`,
      { db: account.schema },
    );
    const names = rows.map((r) => r.name).filter(isPlainIdentifier);
    const stored = new Set(tableNames.flatMap((t) => [t, storedTableOf(t)]));
    const warehouse = tableNames.filter((t) => names.includes(t));
    return [
      ...warehouse,
      ...names.filter((n) => !stored.has(n) && !n.endsWith('_local') && n !== subjectIdsTable),
    ];
  }

  async exportTable(
    account: AccountLocation,
    table: string,
    options: { batchRows: number },
  ): Promise<TableExport | null> {
    const db = checkDatabase(account);
    return this.tables.exportTable(db, table, options);
  }

  async importRows(account: AccountLocation, shape: TableShape, batch: RowBatch): Promise<number> {
    const db = checkDatabase(account);
    checkedShape(shape);
    await this.ensureAccount(account);
    return this.tables.importRows(db, shape, batch);
  }

  async tableDays(account: AccountLocation, table: string): Promise<TableDay[]> {
    const db = checkDatabase(account);
    return this.tables.tableDays(db, table);
  }

  async tableKeysOn(account: AccountLocation, table: string, day: string): Promise<string[]> {
    const db = checkDatabase(account);
    return this.tables.tableKeysOn(db, table, day);
  }

  countSubjectRows(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { signal?: AbortSignal } = {},
  ): Promise<SubjectRowCounts> {
    return this.subjects.count(checkDatabase(account), subjects, options.signal);
  }

  subjectEmails(account: AccountLocation, subjects: SubjectIds): Promise<string[]> {
    return this.subjects.emails(checkDatabase(account), subjects);
  }

  /**
   * Every matching row at once, one lightweight DELETE per table (maxRows does not bound it:
   * the DELETE reads the id columns of the whole table whatever it matches, so one per call is
   * the bound); `more` is false once it returns.
   */
  eraseSubjects(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure> {
    return this.subjects.erase(checkDatabase(account), subjects, options.signal);
  }

  purgeErased(account: AccountLocation): Promise<void> {
    return this.subjects.purge(checkDatabase(account));
  }

  async dropAccount(account: AccountLocation): Promise<void> {
    const db = checkDatabase(account);
    await this.server.command(
      `DROP DATABASE IF EXISTS ${quoteName(db)}${this.layout.cluster ? ` ON CLUSTER ${quoteName(this.layout.cluster)}` : ''}`,
    );
    this.ready.delete(db);
    this.streams.forget(db);
  }

  async close(): Promise<void> {
    await this.server.client.close();
  }

  private async migrate(db: string): Promise<void> {
    for (const statement of databaseStatements(db, this.layout)) await this.server.command(statement);
    const applied = new Set(
      (
        await this.server.rows<{ version: number }>(`SELECT version FROM ${quoteName(db)}._migrations FINAL`)
      ).map((r) => Number(r.version)),
    );
    // DDL here is idempotent (IF NOT EXISTS, OR REPLACE): two processes migrating at once agree.
    for (const migration of clickhouseMigrations.filter((m) => !applied.has(m.version))) {
      for (const statement of migration.statements(db, this.layout)) await this.server.command(statement);
      await this.server.client.insert({
        table: `${quoteName(db)}._migrations`,
        columns: ['version'],
        values: [{ version: migration.version }],
        format: 'JSONEachRow',
      });
    }
  }
}
