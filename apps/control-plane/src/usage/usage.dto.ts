/**
 * Usage over a period of whole UTC days ending today (docs/management-api.md#usage-metering),
 * as the metering job last stored it (see `meteredAt`). Money is in USD, computed as exact
 * decimals and kept to the micro-dollar; GB and TB are decimal units (10^9, 10^12 bytes).
 */
export interface UsageSummary {
  periodDays: number;
  /** First UTC day of the period, YYYY-MM-DD. */
  periodStart: string;
  /** Last UTC day of the period (today), YYYY-MM-DD. */
  periodEnd: string;
  /** `gb`: the warehouse schema's size on the latest metered day; `costUsd`: its daily storage costs summed. */
  storage: { gb: number; costUsd: number };
  /**
   * The work the service did for the account: `gb` processed by its warehouse queries (the
   * service's own reads and task runs'), `costUsd` of those bytes and of its compute seconds.
   */
  compute: { gb: number; costUsd: number };
  /** Rows written by source syncs plus tracking rows loaded, and their cost. */
  syncRows: { total: number; costUsd: number };
  /** storage + compute + sync rows. */
  totalCostUsd: number;
  /** Legacy: the query part of `compute`, in TB. */
  queries: { tbProcessed: number; costUsd: number };
  /** Legacy: seconds of sync jobs, integration runs and task runs. */
  computeSeconds: number;
  /**
   * When the metering job last stored figures of this period (ISO 8601): the figures are as
   * of then. Null when nothing is metered yet. The job runs every USAGE_METERING_INTERVAL_MS
   * (15 minutes by default).
   */
  meteredAt: string | null;
}

/** One UTC day of usage (docs/management-api.md#usage-metering); a day without usage has zeros. */
export interface DailyUsageItem {
  /** YYYY-MM-DD (UTC). */
  date: string;
  storageGb: number;
  storageCostUsd: number;
  /** Bytes processed by the service's own warehouse reads (integrations, usage, audits), in TB. */
  queryTbProcessed: number;
  queryCostUsd: number;
  syncRowsTotal: number;
  syncRowsCostUsd: number;
  /** Seconds of sync jobs, integration runs and task runs that finished that day. */
  computeSeconds: number;
  /** Cost of the compute seconds other than task runs'. */
  computeCostUsd: number;
  /** Seconds of task runs. */
  modelComputeSeconds: number;
  modelComputeCostUsd: number;
  /** Bytes processed by task runs' warehouse reads, in TB. */
  modelQueryTbProcessed: number;
  modelQueryCostUsd: number;
  totalCostUsd: number;
  /** When the metering job last stored this day's figures (ISO 8601); null when it has not. */
  meteredAt: string | null;
}
