import { appTypeDefinition, postgresWarehouseDefaults } from '@pipeline/catalog';
import type { TenantUrlCheckOptions } from '@pipeline/egress';
import { checkWarehouseConnection, type WarehouseCheckResult } from '@pipeline/postgres';
import type { WarehouseConnection, WarehouseTlsMode } from '@pipeline/tenancy';
import { unprocessable } from '../http/api-errors';

/** A customer's warehouse as its app describes it: the connection and the schema to load into. */
export interface WarehouseAppTarget {
  connection: WarehouseConnection;
  schema: string;
}

/** Whether apps of this type are a customer-owned warehouse (checked by connecting). */
export const isWarehouseAppType = (appType: string): boolean =>
  appTypeDefinition(appType)?.warehouse !== undefined;

/**
 * The connection of a postgres_warehouse app, with the catalog's defaults for what its config
 * leaves out (the config is stored as sent, without defaults). The app's id names the warehouse.
 */
export function warehouseAppTarget(
  app: { id: string; config: Record<string, unknown> },
  credentials: Record<string, unknown>,
): WarehouseAppTarget {
  const config = app.config;
  const text = (key: string) => (typeof config[key] === 'string' ? config[key] : '');
  return {
    connection: {
      warehouseId: `app:${app.id}`,
      engine: 'postgres',
      host: text('host'),
      port: typeof config.port === 'number' ? config.port : postgresWarehouseDefaults.port,
      database: text('database'),
      user: text('user'),
      password: typeof credentials.password === 'string' ? credentials.password : '',
      tlsMode: (typeof config.tlsMode === 'string'
        ? config.tlsMode
        : postgresWarehouseDefaults.tlsMode) as WarehouseTlsMode,
      owner: 'customer',
      maxConnections: 1,
    },
    schema: typeof config.schema === 'string' ? config.schema : postgresWarehouseDefaults.schema,
  };
}

/** What POST /apps/{id}/test-connection answers when the warehouse works. */
export interface AppConnectionTest {
  ok: true;
  /** Whether the check created the schema (it did not exist, and the role may create it). */
  schemaCreated: boolean;
}

/**
 * Connects to a customer's warehouse as the loader will (through the egress guard: every
 * address of the host checked, EGRESS_ALLOW_PRIVATE_RANGES honoured), runs SELECT 1 and proves
 * the role can create tables in the schema. A failure is a 422 with its own code, whose
 * message names neither host, user nor password.
 */
export class WarehouseAppCheck {
  constructor(private readonly egress: TenantUrlCheckOptions = {}) {}

  check(target: WarehouseAppTarget): Promise<WarehouseCheckResult> {
    return checkWarehouseConnection(target.connection, target.schema, {
      ...(this.egress.allowPrivateRanges ? { allowPrivateRanges: this.egress.allowPrivateRanges } : {}),
      ...(this.egress.resolve ? { resolve: this.egress.resolve } : {}),
    });
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
