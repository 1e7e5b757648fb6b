import type { BoundFunction } from './bound-function';
/**
 * Where an account's data lands in the warehouse: one schema per account. The control plane
 * shows it, the warehouse loader writes to it.
 */
export function warehouseSchemaFor(accountId: string): string {
  return `account_${accountId.replace(/-/g, '').toLowerCase()}`;
}

/** The warehouse engines an account can be placed on. */
export const warehouseEngines = ['postgres', 'clickhouse'] as const;
export type WarehouseEngineName = (typeof warehouseEngines)[number];

/** How a connection to a warehouse is encrypted: libpq's sslmode names, `verify-full` checking the host name. */
export const warehouseTlsModes = ['disable', 'require', 'verify-full'] as const;
export type WarehouseTlsMode = (typeof warehouseTlsModes)[number];

/**
 * Where an account's warehouse data lands now: carried by the tenant record and by every
 * answer that hands a warehouse's credentials to a process that may use them.
 */
export interface WarehousePlacement {
  warehouseId: string;
  engine: WarehouseEngineName;
  /** The account's schema in that warehouse (a customer-owned warehouse names its own). */
  schema: string;
  /**
   * Raised by one at each cut-over of a move between warehouses: a writer holding an older
   * epoch resolves the placement again before it writes.
   */
  epoch: number;
}

/**
 * How to reach a warehouse: structured fields, never a connection URL (a URL's parameters can
 * redirect the connection or read files on the connecting host). Only the warehouse consumer,
 * the sync engine and the control plane's readers ever hold one.
 */
export interface WarehouseConnection {
  warehouseId: string;
  engine: WarehouseEngineName;
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  tlsMode: WarehouseTlsMode;
  /**
   * `customer`: the account's own server; every connect resolves the host and checks each
   * address with the egress policy. `platform`: one the operator added, trusted as configured.
   */
  owner: 'platform' | 'customer';
  /** Connections one process opens to this warehouse at most. */
  maxConnections: number;
}

/** An account's placement with the connection of its warehouse. */
export interface ResolvedWarehouse {
  placement: WarehousePlacement;
  connection: WarehouseConnection;
  /**
   * While the account moves to another warehouse (its copy stage), rows are written to both:
   * this is the target. Absent otherwise.
   */
  alsoWriteTo?: { placement: WarehousePlacement; connection: WarehouseConnection };
  /** The function version bound to the account's warehouse (docs/functions.md); absent or null: none. */
  function?: BoundFunction | null;
}
