import type { WarehouseRow } from '@pipeline/events';
import type { WarehouseConnection, WarehouseEngineName } from '@pipeline/tenancy';
import { ClickHouseEngine, type ClickHouseEngineOptions } from './clickhouse/clickhouse-engine';
import { clickhouseErrorKind } from './clickhouse/clickhouse-errors';
import { PostgresEngine, type PostgresEngineOptions } from './postgres/postgres-engine';
import { poolCap, WarehouseConnectionBudgetExhausted } from './warehouse-connection-budget';
import { warehouseErrorKind } from './warehouse-errors';
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
} from './warehouse-engine';
import type { WarehousePoolLimits } from './warehouse-pool';

/** Opens one warehouse's engine with a pool of at most `poolMax` connections. */
export type OpenWarehouseEngine = (connection: WarehouseConnection, poolMax: number) => WarehouseEngine;

export interface WarehouseEnginesOptions extends WarehousePoolLimits {
  open: OpenWarehouseEngine;
  /** The verdict of the warehouse's engine on an error: a handle answers it without opening a pool. */
  classifyError: (error: unknown, engine: WarehouseEngineName) => WarehouseErrorClass;
}

/**
 * Each engine's settings, but the pool's size and idle time (the process's limits decide them):
 * a process opens whichever engine a warehouse's connection names.
 */
export interface WarehouseEngineSettings {
  postgres: Omit<PostgresEngineOptions, 'poolMax' | 'idleTimeoutMs'>;
  clickhouse: Omit<ClickHouseEngineOptions, 'poolMax' | 'idleTimeoutMs'>;
}

/** Each engine's own reading of its errors (SQLSTATEs for PostgreSQL, error codes for ClickHouse). */
export const engineErrorKinds: Record<WarehouseEngineName, (error: unknown) => WarehouseErrorClass> = {
  postgres: warehouseErrorKind,
  clickhouse: clickhouseErrorKind,
};

/** Opens the engine the connection names with a pool of `poolMax`, closed after `idleMs` unused. */
export function openWarehouseEngine(settings: WarehouseEngineSettings, idleMs: number): OpenWarehouseEngine {
  return (connection, poolMax) => {
    switch (connection.engine) {
      case 'postgres':
        return new PostgresEngine(connection, { ...settings.postgres, poolMax, idleTimeoutMs: idleMs });
      case 'clickhouse':
        return new ClickHouseEngine(connection, { ...settings.clickhouse, poolMax, idleTimeoutMs: idleMs });
      default:
        // A name the contract does not know (a row written by a newer version): refused, never guessed.
        throw new Error(`warehouse ${connection.warehouseId}: unknown engine ${String(connection.engine)}`);
    }
  };
}

/** An open warehouse as WarehouseEngines sees it (for metrics and tests). */
export interface OpenWarehousePool {
  warehouseId: string;
  /** The pool's size: what it counts against the process's budget. */
  cap: number;
  /** Operations running on it now. */
  active: number;
}

interface Entry {
  connection: WarehouseConnection;
  fingerprint: string;
  engine: WarehouseEngine;
  cap: number;
  active: number;
  lastUsed: number;
  idleTimer: NodeJS.Timeout | undefined;
}

// Every field, the password included: a rotated credential or a moved host opens a new pool.
const fingerprintOf = (connection: WarehouseConnection): string =>
  JSON.stringify([
    connection.warehouseId,
    connection.engine,
    connection.host,
    connection.port,
    connection.database,
    connection.user,
    connection.password,
    connection.tlsMode,
    connection.owner,
    connection.maxConnections,
  ]);

/**
 * The process's warehouse engines: one engine, so one pool, per warehouse id, opened on first
 * use, opened again when the warehouse's connection fields change, and closed once unused for
 * `idleMs`. All pools share `processMaxConnections`: a pool opens with at most its warehouse's
 * maxConnections and half of the budget still free (poolCap); when nothing is free, the least
 * recently used idle pool is closed to make room, and when every pool is busy the operation
 * fails as `unavailable` (SQLSTATE 53300), so its rows are parked rather than lost. The pools of
 * customer-owned warehouses share at most half of the budget (customerBudget). A pool
 * keeps its size until it closes: a warehouse squeezed by a busy moment gets its full share
 * again the next time it opens.
 *
 * `for(connection)` returns a handle, not the engine: each operation goes to the warehouse's
 * current engine, so a caller holding a handle across an idle close or a credential change
 * never uses a closed pool.
 */
export class WarehouseEngines {
  private readonly open = new Map<string, Entry>();
  /** Engines replaced by a new connection, closed once their running operations end. */
  private readonly retiring = new Set<Entry>();
  private closed = false;

  constructor(private readonly options: WarehouseEnginesOptions) {}

  /**
   * Each warehouse opens as the engine its connection names (a PostgresEngine or a
   * ClickHouseEngine) with that engine's settings, and errors are read by that engine's rules.
   */
  static open(limits: WarehousePoolLimits, settings: WarehouseEngineSettings): WarehouseEngines {
    return new WarehouseEngines({
      ...limits,
      classifyError: (error, engine) => (engineErrorKinds[engine] ?? warehouseErrorKind)(error),
      open: openWarehouseEngine(settings, limits.idleMs),
    });
  }

  for(connection: WarehouseConnection): WarehouseEngine {
    return new WarehouseEngineHandle(this, connection);
  }

  /** The open pools and their sizes, retiring ones included. */
  pools(): OpenWarehousePool[] {
    return [...this.open.values(), ...this.retiring].map((e) => ({
      warehouseId: e.connection.warehouseId,
      cap: e.cap,
      active: e.active,
    }));
  }

  /** Connections the open pools may hold together. */
  held(): number {
    let sum = 0;
    for (const entry of this.open.values()) sum += entry.cap;
    for (const entry of this.retiring) sum += entry.cap;
    return sum;
  }

  async close(): Promise<void> {
    this.closed = true;
    const entries = [...this.open.values(), ...this.retiring];
    this.open.clear();
    this.retiring.clear();
    await Promise.all(entries.map((entry) => this.shut(entry)));
  }

  /** Runs `work` on the warehouse's current engine, counted as an operation of its pool. */
  async use<T>(connection: WarehouseConnection, work: (engine: WarehouseEngine) => Promise<T>): Promise<T> {
    const pinned = this.pin(connection);
    try {
      return await work(pinned.engine);
    } finally {
      pinned.release();
    }
  }

  /**
   * The warehouse's current engine, counted as busy (never closed as idle, nor before it is
   * released when replaced) until `release` is called, once.
   */
  pin(connection: WarehouseConnection): { engine: WarehouseEngine; release: () => void } {
    const entry = this.acquire(connection);
    let released = false;
    return {
      engine: entry.engine,
      release: () => {
        if (released) return;
        released = true;
        this.release(entry);
      },
    };
  }

  classifyError(error: unknown, engine: WarehouseEngineName): WarehouseErrorClass {
    // The budget is this process's, whatever the engine: its refusal is never the engine's to read.
    if (error instanceof WarehouseConnectionBudgetExhausted) return 'unavailable';
    return this.options.classifyError(error, engine);
  }

  private acquire(connection: WarehouseConnection): Entry {
    if (this.closed) throw new Error('the warehouse engines are closed');
    const fingerprint = fingerprintOf(connection);
    let entry = this.open.get(connection.warehouseId);
    if (entry && entry.fingerprint !== fingerprint) {
      this.open.delete(connection.warehouseId);
      this.retire(entry);
      entry = undefined;
    }
    entry ??= this.openEntry(connection, fingerprint);
    entry.active += 1;
    entry.lastUsed = Date.now();
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    return entry;
  }

  private release(entry: Entry): void {
    entry.active -= 1;
    entry.lastUsed = Date.now();
    if (entry.active > 0) return;
    if (this.retiring.has(entry)) {
      this.retiring.delete(entry);
      void this.shut(entry);
      return;
    }
    if (this.open.get(entry.connection.warehouseId) !== entry) return;
    entry.idleTimer = setTimeout(() => this.closeIdle(entry), this.options.idleMs);
    entry.idleTimer.unref();
  }

  /**
   * Connections the pools of customer-owned warehouses may hold together: half of the budget.
   * A customer's server can hold every connection it is given (a statement it never answers),
   * so the other half always stays for the platform's warehouses.
   */
  customerBudget(): number {
    return Math.floor(this.options.processMaxConnections / 2);
  }

  /** Connections the open pools of customer-owned warehouses may hold together. */
  heldByCustomers(): number {
    let sum = 0;
    for (const entry of [...this.open.values(), ...this.retiring])
      if (entry.connection.owner === 'customer') sum += entry.cap;
    return sum;
  }

  private capFor(connection: WarehouseConnection): number {
    const cap = poolCap(this.options.processMaxConnections, this.held(), connection.maxConnections);
    if (connection.owner !== 'customer') return cap;
    return Math.min(cap, poolCap(this.customerBudget(), this.heldByCustomers(), connection.maxConnections));
  }

  private openEntry(connection: WarehouseConnection, fingerprint: string): Entry {
    const budget = this.options.processMaxConnections;
    let cap = this.capFor(connection);
    while (cap === 0) {
      const idle = this.leastRecentlyUsedIdle(connection.owner === 'customer');
      if (!idle) throw new WarehouseConnectionBudgetExhausted(connection.warehouseId, budget);
      // An idle pool holds no checked-out connection: ending it frees its share at once.
      this.closeIdle(idle);
      cap = this.capFor(connection);
    }
    const entry: Entry = {
      connection,
      fingerprint,
      engine: this.options.open(connection, cap),
      cap,
      active: 0,
      lastUsed: Date.now(),
      idleTimer: undefined,
    };
    this.open.set(connection.warehouseId, entry);
    return entry;
  }

  /**
   * The idle pool unused longest; for a customer's warehouse whose half is used up, a
   * customer's: closing a platform pool would not make room in the customers' half.
   */
  private leastRecentlyUsedIdle(customer: boolean): Entry | undefined {
    const customersOnly = customer && this.heldByCustomers() >= this.customerBudget();
    let oldest: Entry | undefined;
    for (const entry of this.open.values()) {
      if (entry.active > 0 || (customersOnly && entry.connection.owner !== 'customer')) continue;
      if (!oldest || entry.lastUsed < oldest.lastUsed) oldest = entry;
    }
    return oldest;
  }

  private closeIdle(entry: Entry): void {
    if (entry.active > 0 || this.open.get(entry.connection.warehouseId) !== entry) return;
    this.open.delete(entry.connection.warehouseId);
    void this.shut(entry);
  }

  /** A replaced engine keeps its share until its running operations end. */
  private retire(entry: Entry): void {
    if (entry.active === 0) {
      void this.shut(entry);
      return;
    }
    this.retiring.add(entry);
  }

  private async shut(entry: Entry): Promise<void> {
    clearTimeout(entry.idleTimer);
    entry.idleTimer = undefined;
    // Closing fails only when the server is already gone: nothing is left to close then.
    await entry.engine.close().catch(() => undefined);
  }
}

/** A warehouse's engine as its callers hold it: each operation runs on the current engine. */
class WarehouseEngineHandle implements WarehouseEngine {
  readonly engine: WarehouseEngine['engine'];
  // Private fields: a handle that reaches a log or JSON shows no password, its own or another
  // warehouse's through the registry.
  readonly #engines: WarehouseEngines;
  readonly #connection: WarehouseConnection;

  constructor(engines: WarehouseEngines, connection: WarehouseConnection) {
    this.engine = connection.engine;
    this.#engines = engines;
    this.#connection = connection;
  }

  ensureAccount(account: AccountLocation): Promise<void> {
    return this.#engines.use(this.#connection, (e) => e.ensureAccount(account));
  }

  writeRows(
    account: AccountLocation,
    rows: readonly WarehouseRow[],
    origin?: WriteOrigin,
  ): Promise<WriteResult> {
    return this.#engines.use(this.#connection, (e) => e.writeRows(account, rows, origin));
  }

  writeStream(
    account: AccountLocation,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    return this.#engines.use(this.#connection, (e) => e.writeStream(account, table, primaryKey, records));
  }

  /**
   * The cursor holds a connection of the engine that opened it while the caller handles its
   * batches: that engine counts as busy until the iteration ends (done, failed or broken off),
   * so the caller iterates what it gets.
   */
  async readChanges(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null> {
    const pinned = this.#engines.pin(this.#connection);
    let changes: AsyncIterable<ChangedRow[]> | null;
    try {
      changes = await pinned.engine.readChanges(account, request, options);
    } catch (error) {
      pinned.release();
      throw error;
    }
    if (!changes) {
      pinned.release();
      return null;
    }
    return releasedAtEnd(changes, pinned.release);
  }

  query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]> {
    return this.#engines.use(this.#connection, (e) => e.query(account, name, params, options));
  }

  storageBytes(account: AccountLocation): Promise<number> {
    return this.#engines.use(this.#connection, (e) => e.storageBytes(account));
  }

  probe(): Promise<void> {
    return this.#engines.use(this.#connection, (e) => e.probe());
  }

  classifyError(error: unknown): WarehouseErrorClass {
    return this.#engines.classifyError(error, this.#connection.engine);
  }

  accountTables(account: AccountLocation): Promise<string[]> {
    return this.#engines.use(this.#connection, (e) => e.accountTables(account));
  }

  /** Pins the engine like readChanges: the export holds a connection until its batches end. */
  async exportTable(
    account: AccountLocation,
    table: string,
    options: { batchRows: number },
  ): Promise<TableExport | null> {
    const pinned = this.#engines.pin(this.#connection);
    let exported: TableExport | null;
    try {
      exported = await pinned.engine.exportTable(account, table, options);
    } catch (error) {
      pinned.release();
      throw error;
    }
    if (!exported) {
      pinned.release();
      return null;
    }
    return { shape: exported.shape, batches: releasedAtEnd(exported.batches, pinned.release) };
  }

  importRows(account: AccountLocation, shape: TableShape, batch: RowBatch): Promise<number> {
    return this.#engines.use(this.#connection, (e) => e.importRows(account, shape, batch));
  }

  tableDays(account: AccountLocation, table: string): Promise<TableDay[]> {
    return this.#engines.use(this.#connection, (e) => e.tableDays(account, table));
  }

  tableKeysOn(account: AccountLocation, table: string, day: string): Promise<string[]> {
    return this.#engines.use(this.#connection, (e) => e.tableKeysOn(account, table, day));
  }

  countSubjectRows(
    account: AccountLocation,
    subjects: SubjectIds,
    options?: { signal?: AbortSignal },
  ): Promise<SubjectRowCounts> {
    return this.#engines.use(this.#connection, (e) => e.countSubjectRows(account, subjects, options));
  }

  subjectEmails(account: AccountLocation, subjects: SubjectIds): Promise<string[]> {
    return this.#engines.use(this.#connection, (e) => e.subjectEmails(account, subjects));
  }

  eraseSubjects(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure> {
    return this.#engines.use(this.#connection, (e) => e.eraseSubjects(account, subjects, options));
  }

  purgeErased(account: AccountLocation): Promise<void> {
    return this.#engines.use(this.#connection, (e) => e.purgeErased(account));
  }

  dropAccount(account: AccountLocation): Promise<void> {
    return this.#engines.use(this.#connection, (e) => e.dropAccount(account));
  }

  /** The pool is the registry's: it closes when idle or with the registry. */
  async close(): Promise<void> {}
}

/** `changes`, calling `release` when its iteration ends however it ends. */
function releasedAtEnd<T>(changes: AsyncIterable<T>, release: () => void): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      const iterator = changes[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const result = await iterator.next();
            if (result.done) release();
            return result;
          } catch (error) {
            release();
            throw error;
          }
        },
        async return(value?: unknown) {
          try {
            return (await iterator.return?.(value)) ?? { done: true as const, value: undefined };
          } finally {
            release();
          }
        },
      };
    },
  };
}
