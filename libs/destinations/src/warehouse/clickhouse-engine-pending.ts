// TEMPORARY (branch h-wiring): the signature of the ClickHouse engine the lead is writing in
// clickhouse/clickhouse-engine.ts, so that the wiring builds and runs before it lands. Deleted
// when main brings the engine; nothing here talks to a server.
import type { GuardOptions } from '@pipeline/postgres';
import type { WarehouseConnection } from '@pipeline/tenancy';
import type { WarehouseQueryMeter } from './postgres-engine';
import type { WarehouseEngine, WarehouseErrorClass } from './warehouse-engine';
import type { WarehouseTimeouts } from './warehouse-pool';

export type ClickHouseClientFactory = (connection: WarehouseConnection) => unknown;

export interface ClickHouseEngineOptions {
  timeouts: WarehouseTimeouts;
  poolMax: number;
  idleTimeoutMs: number;
  meter?: WarehouseQueryMeter;
  connect?: ClickHouseClientFactory;
  cluster?: string;
}

export function guardedClickHouseClients(guard: GuardOptions = {}): ClickHouseClientFactory {
  return () => {
    throw new Error(`the ClickHouse engine is not in this build yet (${Object.keys(guard).join(',')})`);
  };
}

export function clickhouseErrorKind(error: unknown): WarehouseErrorClass {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ECONNREFUSED' || code === 'ETIMEDOUT' ? 'unavailable' : 'unexpected';
}

const pending = (): Promise<never> =>
  Promise.reject(new Error('the ClickHouse engine is not in this build yet'));

export class ClickHouseEngine implements WarehouseEngine {
  readonly engine = 'clickhouse' as const;
  constructor(
    readonly connection: WarehouseConnection,
    readonly options: ClickHouseEngineOptions,
  ) {}
  ensureAccount = pending;
  writeRows = pending;
  writeStream = pending;
  readChanges = pending;
  query = pending;
  storageBytes = pending;
  probe = pending;
  classifyError = clickhouseErrorKind;
  accountTables = pending;
  exportTable = pending;
  importRows = pending;
  tableDays = pending;
  tableKeysOn = pending;
  dropAccount = pending;
  close = () => Promise.resolve();
}
