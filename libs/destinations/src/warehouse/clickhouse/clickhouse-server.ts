import type { ClickHouseClient, ClickHouseSettings } from '@clickhouse/client';
import { clickhouseClient, type ClickHouseGuardOptions } from '@pipeline/clickhouse';
import type { WarehouseConnection } from '@pipeline/tenancy';
import type { AccountLocation, ReadOptions, WarehouseTableName } from '../warehouse-engine';
import type { WarehouseQueryMeter } from '../postgres/postgres-engine';
import { isClickHouseDatabaseName } from './clickhouse-ddl';

// How the ClickHouse engine's parts reach one server: its HTTP client, the engine's settings on
// every request, reads metered by the bytes the server says it read, and the server's catalog.

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

export const tableNames: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];

interface Summary {
  read_bytes?: string;
  written_rows?: string;
}

export function summaryOf(headers: Record<string, string | string[] | undefined>): Summary {
  const raw = headers['x-clickhouse-summary'];
  if (typeof raw !== 'string') return {};
  try {
    return JSON.parse(raw) as Summary;
  } catch {
    return {};
  }
}

export function checkDatabase(account: AccountLocation): string {
  if (!isClickHouseDatabaseName(account.schema))
    throw new Error(`invalid warehouse database name ${account.schema}`);
  return account.schema;
}

/** One warehouse's client, shared by the engine's parts, with the engine's settings and meter. */
export class ClickHouseServer {
  constructor(
    readonly client: ClickHouseClient,
    readonly settings: ClickHouseSettings,
    private readonly meter: WarehouseQueryMeter | undefined,
  ) {}

  /** A table's (or view's) columns and their ClickHouse types, in order; none when it does not exist. */
  async columnsOf(db: string, table: string): Promise<{ name: string; type: string; comment: string }[]> {
    return this.rows<{ name: string; type: string; comment: string }>(
      `SELECT name, type, comment FROM system.columns WHERE database = {db:String} AND table = {table:String} ORDER BY position`,
      { db, table },
    );
  }

  async existingTables(db: string): Promise<WarehouseTableName[]> {
    const rows = await this.rows<{ name: string }>(
      `SELECT name FROM system.tables WHERE database = {db:String} AND name IN {names:Array(String)}`,
      { db, names: tableNames },
    );
    const found = new Set(rows.map((r) => r.name));
    return tableNames.filter((t) => found.has(t));
  }

  async tableExists(db: string, table: string): Promise<boolean> {
    const rows = await this.rows(
      'SELECT 1 AS one FROM system.tables WHERE database = {db:String} AND name = {table:String}',
      { db, table },
    );
    return rows.length > 0;
  }

  async command(query: string): Promise<void> {
    await this.client.command({ query, clickhouse_settings: this.settings });
  }

  async rows<R>(
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
  async metered<R>(
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

  async record(accountId: string, purpose: ReadOptions['purpose'], bytes: number): Promise<void> {
    const whole = Number.isFinite(bytes) ? Math.max(0, Math.round(bytes)) : 0;
    if (whole > 0 && this.meter) await this.meter(accountId, purpose, whole);
  }
}
