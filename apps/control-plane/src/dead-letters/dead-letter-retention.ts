import type { DataSource } from 'typeorm';
import type { Logger } from '@pipeline/logger';

/** How often the sweep runs: rows past the retention are already hidden from the API meanwhile. */
export const RETENTION_SWEEP_INTERVAL_MS = 3_600_000;
/** Rows deleted per statement: a sweep after a long pause never holds one long transaction. */
export const RETENTION_SWEEP_ROWS = 1000;

/** The oldest `last_seen_at` a row within a retention of `days` may have at `now`. */
export const retentionCutoff = (days: number, now: Date): Date => new Date(now.getTime() - days * 86_400_000);

/**
 * Deletes the dead-letter index's rows last seen longer ago than the retention (by default the
 * dead-letter topics' own, so the index never keeps a record the topic no longer has), at start
 * and every hour, in statements of RETENTION_SWEEP_ROWS. Between sweeps the API leaves such rows
 * out (DeadLetterService), so the retention holds to the second either way.
 */
export class DeadLetterRetention {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> | undefined;

  constructor(
    private readonly dataSource: DataSource,
    private readonly logger: Logger,
    private readonly retentionDays: number,
  ) {}

  start(): void {
    if (this.timer) return;
    const run = () => {
      this.sweeping ??= this.sweep()
        .catch((error: unknown) =>
          this.logger.warn('dead-letter retention sweep failed; trying again later', {
            error: (error as Error).message,
          }),
        )
        .finally(() => (this.sweeping = undefined));
    };
    run();
    this.timer = setInterval(run, RETENTION_SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  /** Deletes every row past the retention at `now`; the number deleted. */
  async sweep(now = new Date()): Promise<number> {
    const cutoff = retentionCutoff(this.retentionDays, now);
    let deleted = 0;
    for (;;) {
      const [, count] = (await this.dataSource.query(
        `DELETE FROM dead_letters WHERE id IN (
           SELECT id FROM dead_letters WHERE last_seen_at < $1 LIMIT ${RETENTION_SWEEP_ROWS})`,
        [cutoff],
      )) as [unknown, number];
      deleted += count;
      if (count < RETENTION_SWEEP_ROWS) break;
    }
    if (deleted > 0) this.logger.info('dead letters past their retention deleted', { deleted });
    return deleted;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }
}
