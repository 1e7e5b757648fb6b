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
  WarehouseEngines,
  WarehouseErrorClass,
  WriteOrigin,
  WriteResult,
} from '@pipeline/destinations';
import type { WarehouseRow } from '@pipeline/events';
import type { ResolvedWarehouse, WarehouseConnection } from '@pipeline/tenancy';
import { isWarehouseUnavailable, warehouseUnavailable } from '../http/api-errors';
import { isWarehouseConnectionFailure } from './connection-failure';
import { warehouseSchemaOf } from './warehouse-names';

export const DEFAULT_WAREHOUSE_URL = 'postgres://postgres@127.0.0.1:5432/warehouse';

/** The connections one process opens to the WAREHOUSE_URL warehouse at most (before the process budget). */
export const defaultWarehouseMaxConnections = 10;

/** An account's warehouse: the engine that reaches it and the account's place in it. */
export interface LocatedWarehouse {
  engine: WarehouseEngine;
  account: AccountLocation;
  /** `customer`: the account's own server, whose answers (its storage figure) it controls. */
  owner: WarehouseConnection['owner'];
}

/**
 * Where each account's warehouse data is: the task templates, usage metering, integration runs,
 * source syncs and prechecks ask here and write no SQL of their own. A warehouse that cannot be
 * reached answers the documented 503 `warehouse_unavailable` (an AppError), which the API renders
 * and the runs record as their error code.
 */
export interface AccountWarehouses {
  locate(accountId: string): Promise<LocatedWarehouse>;
}

/** Every account in one warehouse (WAREHOUSE_URL's), in its `account_<id>` schema. */
export class OneWarehouse implements AccountWarehouses {
  private readonly engine: WarehouseEngine;
  private readonly owner: WarehouseConnection['owner'];

  constructor(engines: WarehouseEngines, connection: WarehouseConnection) {
    this.engine = new UnavailableAs503(engines.for(connection));
    this.owner = connection.owner;
  }

  async locate(accountId: string): Promise<LocatedWarehouse> {
    return {
      engine: this.engine,
      account: { accountId, schema: warehouseSchemaOf(accountId) },
      owner: this.owner,
    };
  }
}

/**
 * Each account on the warehouse it is placed on (the control plane's placements): its engine,
 * opened on demand by the process's WarehouseEngines, and its schema there.
 */
export class PlacedWarehouses implements AccountWarehouses {
  constructor(
    private readonly resolve: (accountId: string) => Promise<ResolvedWarehouse>,
    private readonly engines: WarehouseEngines,
  ) {}

  async locate(accountId: string): Promise<LocatedWarehouse> {
    const { placement, connection, alsoWriteTo } = await this.resolve(accountId);
    const engine = new UnavailableAs503(this.engines.for(connection));
    return {
      engine: alsoWriteTo
        ? new AlsoWritingTo(engine, new UnavailableAs503(this.engines.for(alsoWriteTo.connection)))
        : engine,
      account: { accountId, schema: placement.schema },
      owner: connection.owner,
    };
  }
}

/** A connection failure as the documented 503 `warehouse_unavailable`; other errors unchanged. */
function asAppError(error: unknown): unknown {
  return isWarehouseConnectionFailure(error) ? warehouseUnavailable(error) : error;
}

async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw asAppError(error);
  }
}

/**
 * An engine whose connection failures are the AppError `warehouse_unavailable`, batches of a
 * change stream included; only the warehouse's own errors pass through here (what a caller
 * throws while handling a batch does not).
 */
export class UnavailableAs503 implements WarehouseEngine {
  readonly engine: WarehouseEngine['engine'];

  constructor(private readonly inner: WarehouseEngine) {
    this.engine = inner.engine;
  }

  ensureAccount(account: AccountLocation): Promise<void> {
    return translated(() => this.inner.ensureAccount(account));
  }

  writeRows(
    account: AccountLocation,
    rows: readonly WarehouseRow[],
    origin?: WriteOrigin,
  ): Promise<WriteResult> {
    return translated(() => this.inner.writeRows(account, rows, origin));
  }

  writeStream(
    account: AccountLocation,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    return translated(() => this.inner.writeStream(account, table, primaryKey, records));
  }

  async readChanges(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null> {
    const changes = await translated(() => this.inner.readChanges(account, request, options));
    if (!changes) return null;
    return {
      [Symbol.asyncIterator]: () => {
        const iterator = changes[Symbol.asyncIterator]();
        return {
          next: () => translated(() => iterator.next()),
          return: async (value?: unknown) =>
            (await translated(async () => iterator.return?.(value))) ?? {
              done: true as const,
              value: undefined,
            },
        };
      },
    };
  }

  query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]> {
    return translated(() => this.inner.query(account, name, params, options));
  }

  storageBytes(account: AccountLocation): Promise<number> {
    return translated(() => this.inner.storageBytes(account));
  }

  probe(): Promise<void> {
    return translated(() => this.inner.probe());
  }

  classifyError(error: unknown): WarehouseErrorClass {
    // A 503 made here carries the driver's error as its cause.
    return this.inner.classifyError(isWarehouseUnavailable(error) ? error.cause : error);
  }

  accountTables(account: AccountLocation): Promise<string[]> {
    return translated(() => this.inner.accountTables(account));
  }

  async exportTable(
    account: AccountLocation,
    table: string,
    options: { batchRows: number },
  ): Promise<TableExport | null> {
    const exported = await translated(() => this.inner.exportTable(account, table, options));
    if (!exported) return null;
    return {
      shape: exported.shape,
      batches: {
        [Symbol.asyncIterator]: () => {
          const iterator = exported.batches[Symbol.asyncIterator]();
          return {
            next: () => translated(() => iterator.next()),
            return: async (value?: unknown) =>
              (await translated(async () => iterator.return?.(value))) ?? {
                done: true as const,
                value: undefined,
              },
          };
        },
      },
    };
  }

  importRows(account: AccountLocation, shape: TableShape, batch: RowBatch): Promise<number> {
    return translated(() => this.inner.importRows(account, shape, batch));
  }

  tableDays(account: AccountLocation, table: string): Promise<TableDay[]> {
    return translated(() => this.inner.tableDays(account, table));
  }

  tableKeysOn(account: AccountLocation, table: string, day: string): Promise<string[]> {
    return translated(() => this.inner.tableKeysOn(account, table, day));
  }

  countSubjectRows(
    account: AccountLocation,
    subjects: SubjectIds,
    options?: { signal?: AbortSignal },
  ): Promise<SubjectRowCounts> {
    return translated(() => this.inner.countSubjectRows(account, subjects, options));
  }

  subjectEmails(account: AccountLocation, subjects: SubjectIds): Promise<string[]> {
    return translated(() => this.inner.subjectEmails(account, subjects));
  }

  eraseSubjects(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure> {
    return translated(() => this.inner.eraseSubjects(account, subjects, options));
  }

  purgeErased(account: AccountLocation): Promise<void> {
    return translated(() => this.inner.purgeErased(account));
  }

  dropAccount(account: AccountLocation): Promise<void> {
    return translated(() => this.inner.dropAccount(account));
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * The engine of an account that is moving: what a source sync writes goes to the target as
 * well (the same schema there), after the source took it, so the move's comparison finds it on
 * both. Everything else (reads, sizes) is the source's until the cut-over.
 */
export class AlsoWritingTo extends UnavailableAs503 {
  constructor(
    inner: WarehouseEngine,
    private readonly also: WarehouseEngine,
  ) {
    super(inner);
  }

  override async ensureAccount(account: AccountLocation): Promise<void> {
    await super.ensureAccount(account);
    await this.also.ensureAccount(account);
  }

  override async writeRows(
    account: AccountLocation,
    rows: readonly WarehouseRow[],
    origin?: WriteOrigin,
  ): Promise<WriteResult> {
    const result = await super.writeRows(account, rows, origin);
    await this.also.writeRows(account, rows, origin);
    return result;
  }

  override async writeStream(
    account: AccountLocation,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    const result = await super.writeStream(account, table, primaryKey, records);
    await this.also.writeStream(account, table, primaryKey, records);
    return result;
  }

  // A regulation erases on both sides of a move: the copy must not bring a subject back.
  override async eraseSubjects(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure> {
    const here = await super.eraseSubjects(account, subjects, options);
    const there = await this.also.eraseSubjects(account, subjects, options);
    return { erased: here.erased, more: here.more || there.more };
  }

  override async countSubjectRows(
    account: AccountLocation,
    subjects: SubjectIds,
    options?: { signal?: AbortSignal },
  ): Promise<SubjectRowCounts> {
    const here = await super.countSubjectRows(account, subjects, options);
    const there = await this.also.countSubjectRows(account, subjects, options);
    // Rows left on either side are rows left: the larger count per table.
    return {
      events: Math.max(here.events, there.events),
      users: Math.max(here.users, there.users),
      groups: Math.max(here.groups, there.groups),
      aliases: Math.max(here.aliases, there.aliases),
    };
  }

  override async subjectEmails(account: AccountLocation, subjects: SubjectIds): Promise<string[]> {
    const emails = new Set([
      ...(await super.subjectEmails(account, subjects)),
      ...(await this.also.subjectEmails(account, subjects)),
    ]);
    return [...emails].sort();
  }

  override async purgeErased(account: AccountLocation): Promise<void> {
    await super.purgeErased(account);
    await this.also.purgeErased(account);
  }
}
