import Decimal from 'decimal.js';
import type { DataSource } from 'typeorm';
import { invalidField, warehouseUnavailable } from '../http/api-errors';
import { returnedRows } from '../database/returned-rows';
import { GB, TB } from './price-list';
import type { DailyUsageItem, UsageSummary } from './usage.dto';
import { utcDay } from './usage-metering';

const DEFAULT_DAYS = 30;
const MAX_DAYS = 365;

interface DailyRow {
  date_key: string;
  storage_bytes: string;
  query_bytes: string;
  model_query_bytes: string;
  compute_ms: string;
  model_compute_ms: string;
  sync_rows: string;
  tracking_rows: string;
  storage_cost_usd: string;
  query_cost_usd: string;
  model_query_cost_usd: string;
  compute_cost_usd: string;
  model_compute_cost_usd: string;
  sync_rows_cost_usd: string;
  metered_at: Date;
}

/** `days`: an integer clamped to 1-365, 30 when absent; anything else is a 400. */
export function periodDays(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_DAYS;
  if (!/^[+-]?\d+$/.test(raw.trim())) throw invalidField('query.days', 'must be an integer');
  return Math.min(MAX_DAYS, Math.max(1, Number(raw.trim())));
}

const num = (value: Decimal, places: number) => Number(value.toFixed(places));
const d = (value: string | undefined) => new Decimal(value ?? 0);

/**
 * The usage endpoints: every day, today included, as the metering job (usage-metering.ts) last
 * stored it. Nothing here reads the warehouse, so a request costs one indexed read of the
 * control plane's database and never waits for, or is billed for, a warehouse scan.
 */
export class UsageService {
  constructor(private readonly dataSource: DataSource) {}

  async daily(
    accountId: string,
    days: string | undefined,
    now: Date = new Date(),
  ): Promise<DailyUsageItem[]> {
    const { dates, rows } = await this.period(accountId, periodDays(days), now);
    return dates.map((date) => toItem(date, rows.get(date)));
  }

  async summary(accountId: string, days: string | undefined, now: Date = new Date()): Promise<UsageSummary> {
    const count = periodDays(days);
    const { dates, rows } = await this.period(accountId, count, now);
    const sum = (pick: (row: DailyRow) => string) =>
      dates.reduce((total, date) => {
        const row = rows.get(date);
        return row ? total.plus(d(pick(row))) : total;
      }, new Decimal(0));
    const latest = [...dates].reverse().find((date) => rows.has(date));
    const meteredAt = [...rows.values()].reduce<Date | null>(
      (last, row) => (last === null || row.metered_at > last ? row.metered_at : last),
      null,
    );
    const storageCost = sum((r) => r.storage_cost_usd);
    const queryBytes = sum((r) => r.query_bytes).plus(sum((r) => r.model_query_bytes));
    const queryCost = sum((r) => r.query_cost_usd).plus(sum((r) => r.model_query_cost_usd));
    const computeCost = queryCost
      .plus(sum((r) => r.compute_cost_usd))
      .plus(sum((r) => r.model_compute_cost_usd));
    const syncCost = sum((r) => r.sync_rows_cost_usd);
    return {
      periodDays: count,
      periodStart: dates[0] ?? '',
      periodEnd: dates[dates.length - 1] ?? '',
      storage: {
        gb: num(d(latest ? rows.get(latest)?.storage_bytes : '0').div(GB), 6),
        costUsd: num(storageCost, 6),
      },
      compute: { gb: num(queryBytes.div(GB), 6), costUsd: num(computeCost, 6) },
      syncRows: {
        total: sum((r) => r.sync_rows)
          .plus(sum((r) => r.tracking_rows))
          .toNumber(),
        costUsd: num(syncCost, 6),
      },
      totalCostUsd: num(storageCost.plus(computeCost).plus(syncCost), 6),
      queries: { tbProcessed: num(queryBytes.div(TB), 9), costUsd: num(queryCost, 6) },
      computeSeconds: num(sum((r) => r.compute_ms).div(1000), 3),
      meteredAt: meteredAt?.toISOString() ?? null,
    };
  }

  private async period(accountId: string, count: number, now: Date) {
    const today = utcDay(now);
    const dates = Array.from({ length: count }, (_, i) =>
      utcDay(new Date(Date.parse(`${today}T00:00:00Z`) - (count - 1 - i) * 86_400_000)),
    );
    const found = returnedRows<DailyRow>(
      await this.dataSource.query(
        `SELECT *, to_char(day, 'YYYY-MM-DD') AS date_key FROM usage_daily
          WHERE account_id = $1 AND day BETWEEN $2::date AND $3::date`,
        [accountId, dates[0], today],
      ),
    );
    const rows = new Map(found.map((row) => [row.date_key, row]));
    if (!rows.has(today)) await this.requireMeterable(accountId);
    return { dates, rows };
  }

  /**
   * Today is not stored: zeros are the truth for an account the job has not metered yet, but
   * not when the job's last attempt could not read the account's warehouse.
   */
  private async requireMeterable(accountId: string): Promise<void> {
    const [state] = returnedRows<{ failure_code: string | null }>(
      await this.dataSource.query(
        `SELECT failure_code FROM usage_metering_state
          WHERE account_id = $1 AND failed_at > COALESCE(succeeded_at, '-infinity')`,
        [accountId],
      ),
    );
    // A pass that gave up on the account's silent server knows no more than one refused.
    if (state?.failure_code === 'warehouse_unavailable' || state?.failure_code === 'metering_timed_out')
      throw warehouseUnavailable();
  }
}

function toItem(date: string, row: DailyRow | undefined): DailyUsageItem {
  const costs = [
    row?.storage_cost_usd,
    row?.query_cost_usd,
    row?.model_query_cost_usd,
    row?.compute_cost_usd,
    row?.model_compute_cost_usd,
    row?.sync_rows_cost_usd,
  ].reduce((total, cost) => total.plus(d(cost)), new Decimal(0));
  return {
    date,
    storageGb: num(d(row?.storage_bytes).div(GB), 6),
    storageCostUsd: num(d(row?.storage_cost_usd), 6),
    queryTbProcessed: num(d(row?.query_bytes).div(TB), 9),
    queryCostUsd: num(d(row?.query_cost_usd), 6),
    syncRowsTotal: d(row?.sync_rows).plus(d(row?.tracking_rows)).toNumber(),
    syncRowsCostUsd: num(d(row?.sync_rows_cost_usd), 6),
    computeSeconds: num(d(row?.compute_ms).div(1000), 3),
    computeCostUsd: num(d(row?.compute_cost_usd), 6),
    modelComputeSeconds: num(d(row?.model_compute_ms).div(1000), 3),
    modelComputeCostUsd: num(d(row?.model_compute_cost_usd), 6),
    modelQueryTbProcessed: num(d(row?.model_query_bytes).div(TB), 9),
    modelQueryCostUsd: num(d(row?.model_query_cost_usd), 6),
    totalCostUsd: num(costs, 6),
    meteredAt: row ? row.metered_at.toISOString() : null,
  };
}
