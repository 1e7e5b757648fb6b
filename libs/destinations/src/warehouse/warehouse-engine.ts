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

/**
 * Where a write's rows were read from: the Kafka records (and the event's place in its record),
 * so that an engine whose inserts are not transactions (ClickHouse) names each insert and a
 * redelivered batch adds nothing. An engine that upserts by key (PostgreSQL) needs none.
 */
export interface WriteOrigin {
  topic: string;
  partition: number;
  /** One per row, in the order of the rows: the record's offset and the event's index in it. */
  positions: readonly string[];
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
  /**
   * A table's calls per type and name (track: the event; page and screen: the name, null when
   * absent; users, groups, aliases: identify, group, alias and null) whose time (timestamp, else
   * received_at) is after `since`: the `maxNames` most frequent, and how many there are in all.
   */
  traffic_names: {
    params: TrafficWindow;
    row: {
      type: string;
      name: string | null;
      count: number;
      firstSeen: Date;
      lastSeen: Date;
      /** Distinct (type, name) pairs in the window, past `maxNames` included. */
      distinctNames: number;
    };
  };
  /**
   * Over the `perName` latest rows of each of traffic_names' names: each top-level member of
   * properties (events) or traits (users, groups), per JSON type (`integer` for a whole
   * number), how many rows hold it so, and its distinct string values when at most `maxValues`
   * of at most `maxValueLength` characters (code points) each.
   */
  traffic_profile: {
    params: TrafficWindow & { perName: number; maxValues: number; maxValueLength: number; maxRows: number };
    row: {
      type: string;
      name: string | null;
      property: string;
      jsonType: 'integer' | 'number' | 'string' | 'boolean' | 'object' | 'array' | 'null';
      count: number;
      /** Distinct string values (only for `string`), null when more than `maxValues` or one too long. */
      strings: string[] | null;
    };
  };
  /**
   * The `perName` latest rows of each of traffic_names' names, whole (every column, times as
   * ISO text, jsonb as JSON), at most `maxRows` in all, shared evenly between the names.
   */
  traffic_rows: {
    params: TrafficWindow & { perName: number; maxRows: number };
    row: { row: Record<string, unknown> };
  };
}

/** A window of one warehouse table for the traffic queries (tracking plans from traffic). */
export interface TrafficWindow {
  table: WarehouseTableName;
  since: Date;
  maxNames: number;
}

export type ReadOnlyQueryName = keyof ReadOnlyQueries;

/**
 * An account's table as a move between warehouses copies it: enough to create it on another
 * warehouse and to merge rows into it by the table's own rules.
 */
export interface TableShape {
  table: string;
  /**
   * How copied rows merge with rows already there: events and aliases once per message id,
   * users and groups keep the newest values (their hidden ordering columns included), a
   * source stream's table upserts on its key keeping the newest sync.
   */
  kind: WarehouseTableName | 'stream';
  columns: { name: string; type: string }[];
  /** The primary key's columns. */
  key: string[];
}

/** `rows` rows of a table in the engine's own exchange text (PostgreSQL: COPY text). */
export interface RowBatch {
  rows: number;
  text: string;
}

/** A table being exported: its shape, and its rows in batches (a cursor held until they end). */
export interface TableExport {
  shape: TableShape;
  batches: AsyncIterable<RowBatch>;
}

/**
 * A table's rows of one UTC day (by received_at, a stream table's by _synced_at; `none` for
 * rows without one): how many, and an order-independent hash of their keys, so two warehouses
 * compare without moving the keys.
 */
export interface TableDay {
  day: string;
  rows: number;
  hash: string;
}

/**
 * Subject ids a regulation names; a USER_ID matches user_id and previous_id, an ANONYMOUS_ID
 * anonymous_id and previous_id.
 */
export interface SubjectIds {
  userIds: readonly string[];
  anonymousIds: readonly string[];
  /**
   * Only events and aliases received at or before it (a DELETE_ONLY regulation keeps what came
   * after its cut-off); users and groups rows go whenever they changed. Absent: every row.
   */
  receivedAtOrBefore?: Date;
}

/** Rows per warehouse table. */
export type SubjectRowCounts = Record<WarehouseTableName, number>;

export interface SubjectErasure {
  /** Rows removed (or, for groups on PostgreSQL, scrubbed) per table by this call. */
  erased: SubjectRowCounts;
  /** True when rows of the subjects may remain: call again (the caller interleaves other accounts between calls). */
  more: boolean;
}

/**
 * One warehouse engine (PostgreSQL or ClickHouse): everything the pipeline does to a warehouse goes
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
  writeRows(
    account: AccountLocation,
    rows: readonly WarehouseRow[],
    origin?: WriteOrigin,
  ): Promise<WriteResult>;
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
  /** The account's tables that exist: its warehouse tables and its source stream tables. */
  accountTables(account: AccountLocation): Promise<string[]>;
  /** The table's shape and rows in batches of at most `batchRows`; null when it does not exist. */
  exportTable(
    account: AccountLocation,
    table: string,
    options: { batchRows: number },
  ): Promise<TableExport | null>;
  /**
   * Merges exported rows into the account's table of that shape (created when missing) by the
   * table's idempotent rules, in one transaction; returns the rows that were new or changed.
   */
  importRows(account: AccountLocation, shape: TableShape, batch: RowBatch): Promise<number>;
  /** The table's rows per UTC day with a hash of their keys; empty when it does not exist. */
  tableDays(account: AccountLocation, table: string): Promise<TableDay[]>;
  /** The keys of the table's rows of one UTC day (as tableDays counts them). */
  tableKeysOn(account: AccountLocation, table: string, day: string): Promise<string[]>;
  /**
   * Rows per table carrying any of the ids (a regulation's dry run; equals what eraseSubjects
   * removes). All zero when the account has no tables.
   */
  countSubjectRows(
    account: AccountLocation,
    subjects: SubjectIds,
    options?: { signal?: AbortSignal },
  ): Promise<SubjectRowCounts>;
  /**
   * The distinct emails the subjects' users rows hold in traits (traits.email, case kept), read
   * before erasure for vendors that delete by email (HubSpot).
   */
  subjectEmails(account: AccountLocation, subjects: SubjectIds): Promise<string[]>;
  /**
   * Removes a bounded amount of the subjects' rows (at most maxRows per statement on
   * PostgreSQL; one lightweight DELETE per table per call on ClickHouse); idempotent, so a
   * crash and a second call are safe. Groups keep the group: on PostgreSQL the subject's
   * identity and context columns are nulled; on ClickHouse the subject's stored group rows go.
   */
  eraseSubjects(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure>;
  /**
   * Makes erasures permanent where the engine only masks rows: ClickHouse rewrites the
   * account's parts without the masked rows (APPLY DELETED MASK); PostgreSQL VACUUMs the
   * account's warehouse tables, so the dead tuples' space is freed for reuse.
   */
  purgeErased(account: AccountLocation): Promise<void>;
  /** Drops the account's schema and everything in it; nothing when it does not exist. */
  dropAccount(account: AccountLocation): Promise<void>;
  /** Closes every connection; the engine is not used afterwards. */
  close(): Promise<void>;
}
