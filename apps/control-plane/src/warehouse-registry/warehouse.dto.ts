import type { WarehouseEngineName, WarehouseTlsMode } from '@pipeline/tenancy';
import type { WarehouseStatus } from './warehouse.entity';

export type { WarehouseStatus } from './warehouse.entity';

/** A warehouse as answered to operators: every field but the password, which is masked. */
export interface WarehouseView {
  id: string;
  name: string;
  engine: WarehouseEngineName;
  owner: 'platform' | 'customer';
  /** The account owning a customer's warehouse: the only account it may hold; null for the platform's. */
  accountId: string | null;
  /** The account's postgres_warehouse app a customer's warehouse is; null for the platform's. */
  appId: string | null;
  /** The schema an account placed on a customer's warehouse loads into; null: `account_<id>`. */
  schema: string | null;
  host: string;
  port: number;
  database: string;
  user: string;
  /** Always `**********`: the password is write-only. */
  password: string;
  tlsMode: WarehouseTlsMode;
  maxConnections: number;
  isDefault: boolean;
  status: WarehouseStatus;
  statusDetail: string | null;
  statusChangedAt: string;
  createdAt: string;
}

/** A warehouse with what it holds: placed accounts and their storage. */
export interface WarehouseSummary extends WarehouseView {
  /** @isInt */
  accounts: number;
  /** Sum of the placed accounts' storage; null when the warehouse could not be asked. */
  sizeBytes: number | null;
}

export interface PlacedAccount {
  accountId: string;
  accountName: string;
  schema: string;
  epoch: number;
  placedAt: string;
}

/**
 * Re-places an account on this warehouse without copying its data: for a warehouse that is
 * gone for good. Its tables stay on the old warehouse, unread.
 */
export interface PlaceAccountBody {
  /**
   * @minLength 1
   * @maxLength 64
   */
  accountId: string;
  /**
   * Must be `true`: the account's data on its current warehouse is left behind (400
   * `abandon_data_required` otherwise).
   */
  abandonData?: boolean;
}

/** Where a re-placed account is now, and what it left behind. */
export interface AbandonedPlacementView {
  accountId: string;
  warehouseId: string;
  engine: WarehouseEngineName;
  schema: string;
  /** @isInt */
  epoch: number;
  /** The warehouse and schema its old tables stay on, unread; null when it had no placement. */
  abandoned: { warehouseId: string; schema: string } | null;
}

/** A new platform warehouse. */
export interface CreateWarehouseBody {
  /**
   * Lower-case letters, digits, `_` and `-`; unique.
   * @pattern ^[a-z0-9][a-z0-9_-]{0,62}$
   */
  name: string;
  /**
   * The server's kind (default `postgres`); it never changes afterwards. A ClickHouse warehouse
   * is reached over its HTTP interface (`tlsMode` `disable`) or HTTPS.
   */
  engine?: WarehouseEngineName;
  /**
   * @minLength 1
   * @maxLength 253
   */
  host: string;
  /**
   * Default: 5432 for PostgreSQL; for ClickHouse 8123 (HTTP, `tlsMode` `disable`), else 8443.
   * @isInt
   * @minimum 1
   * @maximum 65535
   */
  port?: number;
  /**
   * @minLength 1
   * @maxLength 63
   */
  database: string;
  /**
   * @minLength 1
   * @maxLength 63
   */
  user: string;
  /**
   * Write-only: stored sealed with the credential keys, never answered.
   * @maxLength 1000
   */
  password: string;
  tlsMode: WarehouseTlsMode;
  /**
   * Connections one process opens to this warehouse at most (default 10).
   * @isInt
   * @minimum 1
   * @maximum 1000
   */
  maxConnections?: number;
  /** Make it the default: accounts created from now on are placed on it. */
  isDefault?: boolean;
}

/** What a consumer met at a warehouse. */
export interface WarehouseStatusReport {
  status: WarehouseStatus;
  /**
   * What it met, for operators (never a password: consumers report the error's class).
   * @maxLength 500
   */
  detail?: string;
}

export interface ResolveWarehouseBody {
  /**
   * @minLength 1
   * @maxLength 64
   */
  accountId: string;
}

/** Changes to a warehouse's connection; absent fields are kept. */
export interface UpdateWarehouseBody {
  /**
   * @minLength 1
   * @maxLength 253
   */
  host?: string;
  /**
   * @isInt
   * @minimum 1
   * @maximum 65535
   */
  port?: number;
  /**
   * @minLength 1
   * @maxLength 63
   */
  database?: string;
  /**
   * @minLength 1
   * @maxLength 63
   */
  user?: string;
  /**
   * Write-only: a new password (rotation), sealed with the credential keys.
   * @maxLength 1000
   */
  password?: string;
  tlsMode?: WarehouseTlsMode;
  /**
   * @isInt
   * @minimum 1
   * @maximum 1000
   */
  maxConnections?: number;
}

/** Moves an account to another platform warehouse. */
export interface StartWarehouseMoveBody {
  /**
   * @minLength 1
   * @maxLength 64
   */
  accountId: string;
  /**
   * The target warehouse's id or name.
   * @minLength 1
   * @maxLength 63
   */
  toWarehouse: string;
}

/** One table's comparison of the two warehouses. */
export interface WarehouseMoveTableCheck {
  /** @isInt */
  sourceRows: number;
  /** @isInt */
  targetRows: number;
  /** UTC days (YYYY-MM-DD, `none` for undated rows) with rows of the source missing on the target. */
  missingDays: string[];
}

/** The last comparison: `verify` before the cut-over, `drain` after it. */
export interface WarehouseMoveVerification {
  stage: 'verify' | 'drain';
  at: string;
  ok: boolean;
  tables: { [table: string]: WarehouseMoveTableCheck };
}

/** A move of an account between warehouses, as operators see it. */
export interface WarehouseMoveView {
  id: string;
  accountId: string;
  /** Null once that warehouse was deleted (a finished move's record outlives it). */
  fromWarehouseId: string | null;
  /** Null once that warehouse was deleted (a finished move's record outlives it). */
  toWarehouseId: string | null;
  /** The account's schema on the source, and on the target unless `toSchema` names another. */
  schema: string;
  /** The schema on the target when it differs: the app's, on the account's own server. */
  toSchema: string | null;
  /** queued, copy, verify, cut_over, drain, retire, then done or failed. */
  stage: 'queued' | 'copy' | 'verify' | 'cut_over' | 'drain' | 'retire' | 'done' | 'failed';
  /** The job that runs it (GET /api/v1/... jobs are the account's; this one is the operator's). */
  jobId: string | null;
  /** Rows copied per table by the copy stage and by the drain's copy. */
  progress: {
    copy?: { [table: string]: number };
    drain?: { [table: string]: number };
  };
  verification: WarehouseMoveVerification | null;
  /** @isInt */
  copyAttempts: number;
  error: { code: string; message: string } | null;
  createdAt: string;
  updatedAt: string;
  cutOverAt: string | null;
  finishedAt: string | null;
}
