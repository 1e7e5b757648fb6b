import { appTypeDefinition, clickhouseWarehouseDefaults, postgresWarehouseDefaults } from '@pipeline/catalog';
import { checkClickHouseConnection, type ClickHouseCheckOptions } from '@pipeline/clickhouse';
import type { TenantUrlCheckOptions } from '@pipeline/egress';
import { checkWarehouseConnection, type WarehouseCheckResult } from '@pipeline/postgres';
import type { WarehouseConnection, WarehouseEngineName, WarehouseTlsMode } from '@pipeline/tenancy';
import { unprocessable } from '../http/api-errors';

/** A customer's warehouse as its app describes it: the connection and the schema to load into. */
export interface WarehouseAppTarget {
  connection: WarehouseConnection;
  /** PostgreSQL: the app's schema; ClickHouse: the app's database (ClickHouse has no schemas). */
  schema: string;
}

/** Whether apps of this type are a customer-owned warehouse (checked by connecting). */
export const isWarehouseAppType = (appType: string): boolean =>
  appTypeDefinition(appType)?.warehouse !== undefined;

/** The engine of a warehouse app type (postgres for one the catalog does not know). */
export const warehouseEngineOf = (appType: string): WarehouseEngineName =>
  appTypeDefinition(appType)?.warehouse?.engine ?? 'postgres';

/**
 * The connection of a customer's warehouse app (postgres_warehouse, clickhouse_warehouse), with
 * the catalog's defaults for what its config leaves out (the config is stored as sent, without
 * defaults). The app's id names the warehouse. On ClickHouse the database is where the tables
 * go, so it is also the placement's schema.
 */
export function warehouseAppTarget(
  app: { id: string; appType: string; config: Record<string, unknown> },
  credentials: Record<string, unknown>,
): WarehouseAppTarget {
  const config = app.config;
  const engine = warehouseEngineOf(app.appType);
  const defaults = engine === 'clickhouse' ? clickhouseWarehouseDefaults : postgresWarehouseDefaults;
  const text = (key: string) => (typeof config[key] === 'string' ? config[key] : '');
  return {
    connection: {
      warehouseId: `app:${app.id}`,
      engine,
      host: text('host'),
      port: typeof config.port === 'number' ? config.port : defaults.port,
      database: text('database'),
      user: text('user'),
      password: typeof credentials.password === 'string' ? credentials.password : '',
      tlsMode: (typeof config.tlsMode === 'string' ? config.tlsMode : defaults.tlsMode) as WarehouseTlsMode,
      owner: 'customer',
      maxConnections: 1,
    },
    schema:
      engine === 'clickhouse'
        ? text('database')
        : typeof config.schema === 'string'
          ? config.schema
          : postgresWarehouseDefaults.schema,
  };
}

/** What POST /apps/{id}/test-connection answers when the warehouse works. */
export interface AppConnectionTest {
  ok: true;
  /**
   * Whether the check created the schema (PostgreSQL) or the database (ClickHouse): it did not
   * exist, and the user may create it.
   */
  schemaCreated: boolean;
}

/** Checks a ClickHouse connection; the test harness may give its own (a client factory). */
export type ClickHouseCheck = (
  connection: WarehouseConnection,
  options: ClickHouseCheckOptions,
) => ReturnType<typeof checkClickHouseConnection>;

/**
 * Connects to a customer's warehouse as the loader will (through the egress guard: every
 * address of the host checked, EGRESS_ALLOW_PRIVATE_RANGES honoured), runs SELECT 1 and proves
 * the user can create tables where the account's tables go, by the app's engine. A failure is
 * a 422 with its own code (the same codes on both engines), whose message names neither host,
 * user nor password.
 */
export class WarehouseAppCheck {
  constructor(
    private readonly egress: TenantUrlCheckOptions = {},
    private readonly clickhouse: ClickHouseCheck = checkClickHouseConnection,
  ) {}

  async check(target: WarehouseAppTarget): Promise<WarehouseCheckResult> {
    const guard = {
      ...(this.egress.allowPrivateRanges ? { allowPrivateRanges: this.egress.allowPrivateRanges } : {}),
      ...(this.egress.resolve ? { resolve: this.egress.resolve } : {}),
    };
    if (target.connection.engine === 'clickhouse') {
      const result = await this.clickhouse(target.connection, guard);
      return result.ok
        ? { ok: true, schemaCreated: result.databaseCreated, serverVersion: result.serverVersion }
        : result;
    }
    return checkWarehouseConnection(target.connection, target.schema, guard);
  }

  /** 422 with the failure's code (warehouse_login_failed, egress_address_refused, ...). */
  async assertWorks(target: WarehouseAppTarget, field: string): Promise<AppConnectionTest> {
    const result = await this.check(target);
    if (!result.ok) {
      throw unprocessable(result.code, `The warehouse connection test failed: ${result.message}`, [
        { path: field, message: result.message },
      ]);
    }
    return { ok: true, schemaCreated: result.schemaCreated };
  }
}
