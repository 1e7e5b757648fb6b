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
  /**
   * For a status other than `active`: on the account's own server, what was met there (never a
   * password); on the service's, a fixed text per status (the driver's text, which names the
   * service's hosts and users, stays with the operator).
   */
  statusDetail: string | null;
  statusChangedAt: string;
  /** The account's postgres_warehouse app, when the warehouse is the account's own server. */
  appId: string | null;
}
