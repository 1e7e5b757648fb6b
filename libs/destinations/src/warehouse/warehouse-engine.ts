import type { WarehouseRow } from '@pipeline/events';
import type { WarehouseEngineName } from '@pipeline/tenancy';

/**
 * What a warehouse error means for the rows that met it:
 * - `data`: the rows themselves cannot be stored; they are isolated and dead-lettered.
 * - `unavailable`: the warehouse cannot take anything now (down, overloaded, a lock or statement
 *   timeout); the rows are parked until it is back.
 * - `misconfigured`: it answers but refuses us (login refused, database or schema missing,
 *   permission denied): nothing works until somebody fixes it; the rows are parked and the
 *   warehouse's status shows it.
 * - `unexpected`: a bug; the process exits so that an operator sees it.
 */
export type WarehouseErrorClass = 'data' | 'unavailable' | 'misconfigured' | 'unexpected';

/** One account's place in one warehouse: the engine never derives the schema itself. */
export interface AccountLocation {
  accountId: string;
  schema: string;
}

export interface WriteResult {
  /** Rows that were new, or that changed an existing user or group. */
  written: number;
  /** Rows already present (redelivery) or older than what is stored: nothing changed. */
  duplicates: number;
}

export interface StreamWriteResult {
  /** Rows inserted or updated (a record seen twice in one call counts once). */
  written: number;
  /** Columns added to the table for fields seen for the first time. */
  addedColumns: string[];
}

/** A position in a change stream: rows after (at, key), in (at, key) order. */
export interface ChangeWatermark {
  at: string;
  key: string;
}

/** What an integration run reads: the rows of one table changed since a watermark. */
export type ChangeRequest =
  | { kind: 'users'; since: ChangeWatermark }
  | { kind: 'events'; since: ChangeWatermark; receivedSince: Date; names: string[] | null }
  | { kind: 'stream'; table: string; since: ChangeWatermark };

/** A changed row: its change time and key (the next watermark) and its columns. */
export interface ChangedRow {
  at: string;
  key: string;
  row: Record<string, unknown>;
}

/** Whose budget a read is metered against (usage: query bytes). */
export type ReadPurpose = 'query' | 'model_query';

export interface ReadOptions {
  purpose: ReadPurpose;
  /** An abort cancels the statement on the server. */
  signal?: AbortSignal;
}

export type WarehouseTableName = 'events' | 'users' | 'groups' | 'aliases';

/**
 * The read-only queries the control plane asks an account's warehouse, by name: their SQL is
 * the engine's, so a task template or the usage meter never writes a dialect of its own.
 */
export interface ReadOnlyQueries {
  /** The account's warehouse tables that exist. */
  existing_tables: { params: Record<string, never>; row: { table: WarehouseTableName } };
  /** Whether any warehouse table of the account has a row. */
  has_rows: { params: Record<string, never>; row: { found: boolean } };
  /** Events per type and name whose time (timestamp, else received_at) is after `since`. */
  event_names: {
    params: { since: Date };
    row: { type: string; name: string; count: number; firstSeen: Date; lastSeen: Date };
  };
  /** Per event type and name, each top-level property's JSON types and how often each was seen. */
  event_property_types: {
    params: { since: Date };
    row: { type: string; event: string; property: string; jsonType: string; count: number };
  };
  /** A table's row count, latest received_at and timestamp, and rows received in the 24 h before `now`. */
  table_freshness: {
    params: { table: WarehouseTableName; now: Date };
    row: { rows: number; lastReceivedAt: Date | null; lastEventAt: Date | null; rowsLast24h: number };
  };
  /** Rows of all warehouse tables received on a UTC day (YYYY-MM-DD). */
  rows_received_on: { params: { day: string }; row: { rows: number } };
}

export type ReadOnlyQueryName = keyof ReadOnlyQueries;

/**
 * One warehouse engine (PostgreSQL today): everything the pipeline does to a warehouse goes
 * through here, so that no other module writes its SQL. One instance per warehouse, holding
 * that warehouse's connections.
 */
export interface WarehouseEngine {
  readonly engine: WarehouseEngineName;
  /** Creates the account's schema and tables, or brings them up to date; idempotent. */
  ensureAccount(account: AccountLocation): Promise<void>;
  /**
   * Writes normalized rows idempotently: an event or alias once per message id; a user or
   * group keeps the newest event's values, ordered by (timestamp, received_at, message_id).
   */
  writeRows(account: AccountLocation, rows: readonly WarehouseRow[]): Promise<WriteResult>;
  /** Upserts a source stream's records on its primary key into `<table>` of the account. */
  writeStream(
    account: AccountLocation,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult>;
  /**
   * The rows changed after the watermark, in (at, key) order, in batches of at most
   * `batchRows`; null when the table does not exist yet.
   */
  readChanges(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null>;
  /** Runs a named read-only query in a read-only transaction, metered for the account. */
  query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]>;
  /** Bytes the account's tables and indexes take on disk. */
  storageBytes(account: AccountLocation): Promise<number>;
  /** Connects and runs a trivial statement; throws what it met (see classifyError). */
  probe(): Promise<void>;
  classifyError(error: unknown): WarehouseErrorClass;
  /** Closes every connection; the engine is not used afterwards. */
  close(): Promise<void>;
}
