import type { DataSource } from 'typeorm';
import type { Logger } from '@pipeline/logger';
import { isAlreadyReported, isWarehouseUnavailable } from '../http/api-errors';
import type { AccountWarehouses, LocatedWarehouse } from '../warehouse-access/account-warehouses';
import { returnedRows } from '../database/returned-rows';
import { costsOfDay, type DayFigures, type PriceList } from './price-list';

/** A UTC calendar day, YYYY-MM-DD. */
export const utcDay = (at: Date): string => at.toISOString().slice(0, 10);

/**
 * Meters what the service spent for an account on a UTC day and stores it, with its costs, in
 * `usage_daily`. Every figure is read from where the spending happened:
 * - storage: PostgreSQL's own pg_total_relation_size of every table (with its indexes and
 *   TOAST) in the account's warehouse schema (ClickHouse: its parts on disk), bounded to
 *   [0, MAX_STORAGE_BYTES]; only measurable now, so a past day keeps the size metered on it.
 *   Billed only on the service's warehouses: on the account's own server it is shown at no
 *   cost (the account pays for that disk, and that server's answers are the account's to make);
 * - query and model query: the bytes the metered warehouse queries processed that day
 *   (`usage_query_bytes`, written by the warehouse engine's meter);
 * - compute: the seconds the sync jobs and integration runs that finished that day ran, all
 *   their attempts added up, and the task runs' (model compute) from start to end;
 * - sync rows: rows written by the source syncs that finished that day, plus the tracking
 *   rows loaded into events, users, groups and aliases that day (by received_at).
 * The usage endpoints only read what this stores: the scans above run once per account per
 * metering pass, never per request, so no tenant's usage calls hold the shared warehouse pool.
 * An account whose warehouse schema does not exist yet has zero storage and tracking rows.
 */
export interface MeteringOptions {
  /**
   * An account's time in a metering pass (USAGE_METERING_ACCOUNT_DEADLINE_MS): past it the
   * pass records the account as failed (`metering_timed_out`) and goes on to the next one. A
   * customer's own server may never answer; the pass must not wait for it with every other
   * account behind.
   */
  accountDeadlineMs?: number;
}

/** 60 s: far longer than metering an account takes, far shorter than a pass's interval. */
export const defaultAccountDeadlineMs = 60_000;

/** An account's metering did not end within its deadline; it may still end in the background. */
export class MeteringTimedOut extends Error {
  readonly code = 'metering_timed_out';

  constructor(readonly deadlineMs: number) {
    super(`metering did not end within ${deadlineMs} ms`);
    this.name = 'MeteringTimedOut';
  }
}

export class UsageMetering {
  private readonly accountDeadlineMs: number;

  constructor(
    private readonly dataSource: DataSource,
    private readonly warehouses: AccountWarehouses,
    private readonly prices: PriceList,
    options: MeteringOptions = {},
  ) {
    this.accountDeadlineMs = options.accountDeadlineMs ?? defaultAccountDeadlineMs;
  }

  /**
   * Meters and stores the day, and records how the attempt went in usage_metering_state: the
   * usage endpoints read that instead of the warehouse.
   */
  async meterDay(accountId: string, day: string, now: Date = new Date()): Promise<void> {
    try {
      await this.store(accountId, day, now);
    } catch (error) {
      await this.recordFailure(accountId, failureCodeOf(error));
      throw error;
    }
    await this.dataSource.query(
      `INSERT INTO usage_metering_state (account_id, succeeded_at) VALUES ($1, now())
       ON CONFLICT (account_id) DO UPDATE SET succeeded_at = now()`,
      [accountId],
    );
  }

  private async recordFailure(accountId: string, code: string): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO usage_metering_state (account_id, failed_at, failure_code) VALUES ($1, now(), $2)
       ON CONFLICT (account_id) DO UPDATE SET failed_at = now(), failure_code = EXCLUDED.failure_code`,
      [accountId, code],
    );
  }

  private async store(accountId: string, day: string, now: Date): Promise<void> {
    const figures = await this.figures(accountId, day, utcDay(now) === day);
    const costs = costsOfDay(day, figures, this.prices);
    await this.dataSource.query(
      `INSERT INTO usage_daily (account_id, day, storage_bytes, query_bytes, model_query_bytes,
         compute_ms, model_compute_ms, sync_rows, tracking_rows, storage_cost_usd, query_cost_usd,
         model_query_cost_usd, compute_cost_usd, model_compute_cost_usd, sync_rows_cost_usd, metered_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, now())
       ON CONFLICT (account_id, day) DO UPDATE SET
         storage_bytes = EXCLUDED.storage_bytes, query_bytes = EXCLUDED.query_bytes,
         model_query_bytes = EXCLUDED.model_query_bytes, compute_ms = EXCLUDED.compute_ms,
         model_compute_ms = EXCLUDED.model_compute_ms, sync_rows = EXCLUDED.sync_rows,
         tracking_rows = EXCLUDED.tracking_rows, storage_cost_usd = EXCLUDED.storage_cost_usd,
         query_cost_usd = EXCLUDED.query_cost_usd, model_query_cost_usd = EXCLUDED.model_query_cost_usd,
         compute_cost_usd = EXCLUDED.compute_cost_usd, model_compute_cost_usd = EXCLUDED.model_compute_cost_usd,
         sync_rows_cost_usd = EXCLUDED.sync_rows_cost_usd, metered_at = now()`,
      [
        accountId,
        day,
        figures.storageBytes,
        figures.queryBytes,
        figures.modelQueryBytes,
        figures.computeMs,
        figures.modelComputeMs,
        figures.syncRows,
        figures.trackingRows,
        costs.storage.toFixed(),
        costs.query.toFixed(),
        costs.modelQuery.toFixed(),
        costs.compute.toFixed(),
        costs.modelCompute.toFixed(),
        costs.syncRows.toFixed(),
      ],
    );
  }

  /**
   * Meters the day for every account; one account's failure, or its server's silence past the
   * account's deadline, does not stop the others.
   */
  async meterAll(day: string, logger: Logger, now: Date = new Date()): Promise<number> {
    const accounts = returnedRows<{ id: string }>(await this.dataSource.query('SELECT id FROM accounts'));
    let metered = 0;
    for (const { id } of accounts) {
      try {
        await this.meterWithinDeadline(id, day, now);
        metered += 1;
      } catch (error) {
        // Credentials the keys cannot open were told once at start, with the fix.
        if (isAlreadyReported(error)) continue;
        logger.error('usage metering failed', {
          accountId: id,
          day,
          error,
          ...(isWarehouseUnavailable(error) ? { cause: String(error.cause) } : {}),
        });
      }
    }
    return metered;
  }

  /**
   * meterDay, given up after the account's deadline. The abandoned attempt goes on until its
   * connection's own deadline ends it (a customer's server: the read deadline); what it stores
   * then is as good as the next pass's.
   */
  private async meterWithinDeadline(accountId: string, day: string, now: Date): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const attempt = this.meterDay(accountId, day, now);
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new MeteringTimedOut(this.accountDeadlineMs)), this.accountDeadlineMs);
    });
    try {
      await Promise.race([attempt, late]);
    } catch (error) {
      if (!(error instanceof MeteringTimedOut)) throw error;
      attempt.catch(() => undefined);
      await this.recordFailure(accountId, error.code);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private async figures(accountId: string, day: string, isToday: boolean): Promise<DayFigures> {
    const number = (value: unknown) => Number(value ?? 0);
    // The warehouse reads first: their own bytes are part of the day's query bytes read below.
    const located = await this.warehouses.locate(accountId);
    const storageBytes = isToday
      ? await located.engine.storageBytes(located.account)
      : await this.meteredStorage(accountId, day);
    const trackingRows = await this.trackingRows(located, day);
    const [queries] = returnedRows<{ query: string | null; model_query: string | null }>(
      await this.dataSource.query(
        `SELECT sum(bytes) FILTER (WHERE purpose = 'query') AS query,
                sum(bytes) FILTER (WHERE purpose = 'model_query') AS model_query
           FROM usage_query_bytes WHERE account_id = $1 AND day = $2`,
        [accountId, day],
      ),
    );
    // Day bounds in UTC whatever the session's TimeZone.
    const window = `finished_at >= $2::date::timestamp AT TIME ZONE 'UTC'
      AND finished_at < ($2::date + 1)::timestamp AT TIME ZONE 'UTC'`;
    // A job's compute_ms adds up every attempt (retries, deferrals, shutdowns included). A
    // warehouse move is the operator's doing: the account is not charged for it.
    const [jobs] = returnedRows<{ ms: string | null; sync_rows: string | null }>(
      await this.dataSource.query(
        `SELECT sum(compute_ms) AS ms, sum(rows_written) FILTER (WHERE kind = 'source_sync') AS sync_rows
           FROM jobs WHERE account_id = $1 AND kind <> 'warehouse_move' AND ${window}`,
        [accountId, day],
      ),
    );
    const [runs] = returnedRows<{ ms: string | null }>(
      await this.dataSource.query(
        `SELECT sum(extract(epoch FROM finished_at - started_at) * 1000) AS ms
           FROM task_runs WHERE account_id = $1 AND ${window} AND started_at IS NOT NULL`,
        [accountId, day],
      ),
    );
    const modelComputeMs = Math.round(number(runs?.ms));
    return {
      storageBytes,
      // The account's own server: it pays for that disk itself, and its figure is its own to
      // make up (shown, never billed).
      storageBilled: located.owner === 'platform',
      queryBytes: number(queries?.query),
      modelQueryBytes: number(queries?.model_query),
      computeMs: Math.round(number(jobs?.ms)) + modelComputeMs,
      modelComputeMs,
      syncRows: number(jobs?.sync_rows),
      trackingRows,
    };
  }

  private async meteredStorage(accountId: string, day: string): Promise<number> {
    const [row] = returnedRows<{ storage_bytes: string }>(
      await this.dataSource.query(
        'SELECT storage_bytes FROM usage_daily WHERE account_id = $1 AND day = $2',
        [accountId, day],
      ),
    );
    return Number(row?.storage_bytes ?? 0);
  }

  private async trackingRows({ engine, account }: LocatedWarehouse, day: string): Promise<number> {
    const [row] = await engine.query(account, 'rows_received_on', { day }, { purpose: 'query' });
    return row?.rows ?? 0;
  }
}

const failureCodeOf = (error: unknown): string =>
  isWarehouseUnavailable(error) ? error.code : 'metering_failed';

/**
 * Meters every account's today and yesterday (so the last hours of a day are counted once it
 * ends) at start and then every intervalMs; a pass never overlaps the previous one.
 */
export class MeteringTimer {
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;

  constructor(
    private readonly metering: UsageMetering,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.run(), this.intervalMs);
    this.timer.unref();
    void this.run();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.pass;
  }

  run(now: Date = new Date()): Promise<void> {
    const pass =
      this.pass ??
      (async () => {
        try {
          const yesterday = utcDay(new Date(now.getTime() - 86_400_000));
          await this.metering.meterAll(yesterday, this.logger, now);
          const metered = await this.metering.meterAll(utcDay(now), this.logger, now);
          this.logger.info('usage metered', { accounts: metered });
        } catch (error) {
          this.logger.error('usage metering pass failed', { error });
        } finally {
          this.pass = undefined;
        }
      })();
    this.pass = pass;
    return pass;
  }
}
