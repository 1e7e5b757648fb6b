import type { WarehouseStatus } from '../warehouse-registry/warehouse.entity';

/** Where the account's warehouse data lives now, and how that warehouse is doing. */
export interface AccountWarehouse {
  /** The warehouse the account is placed on. */
  warehouseId: string;
  /** `platform`: a server the service runs; `customer`: the account's own PostgreSQL (its app). */
  owner: 'platform' | 'customer';
  engine: 'postgres' | 'clickhouse';
  /** The schema the account's tables are in: `account_<id>`, or the app's `schema` on its own server. */
  schema: string;
  /**
   * Bumped at each placement change (a move's cut-over).
   * @isInt
   */
  epoch: number;
  /**
   * As the warehouse consumer last reported it: `active`; `unavailable` (the server does not
   * answer: loading waits and resumes); `misconfigured` (it answers but refuses: wrong password,
   * missing database, no privilege; the records wait until it is fixed).
   */
  status: WarehouseStatus;
  /** What was met, for a status other than `active` (never a password). */
  statusDetail: string | null;
  statusChangedAt: string;
  /** The account's postgres_warehouse app, when the warehouse is the account's own server. */
  appId: string | null;
}
