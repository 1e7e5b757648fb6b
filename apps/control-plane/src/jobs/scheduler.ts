import type { DataSource, EntityManager } from 'typeorm';
import type { Logger } from '@pipeline/logger';

/**
 * Enqueues the jobs of one kind of owner (sources, integrations) that are due at `now`, in the
 * given transaction, and returns how many it queued. It must lock what it reads with
 * FOR UPDATE SKIP LOCKED, so two control-plane replicas ticking together share the work.
 */
export type DueFinder = (tx: EntityManager, now: Date) => Promise<number>;

export interface SchedulerOptions {
  dataSource: DataSource;
  logger: Logger;
  intervalMs: number;
  /** Told when a tick queued jobs, so the local job runner claims them at once. */
  onQueued?: () => void;
}

/**
 * Ticks every intervalMs and asks each registered due finder to queue what is due. The schedule
 * itself lives in the owners' rows (`next_sync_at`), so a restarted or replaced control plane
 * picks up where the last one stopped, and a tick missed while nothing ran is caught up once.
 */
export class Scheduler {
  private readonly finders = new Map<string, DueFinder>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<number> | undefined;

  constructor(private readonly options: SchedulerOptions) {}

  register(name: string, finder: DueFinder): this {
    this.finders.set(name, finder);
    return this;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.options.intervalMs);
    this.timer.unref();
    void this.tick();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.ticking;
  }

  /** One pass over every finder; ticks never overlap. Returns the number of jobs queued. */
  tick(now: Date = new Date()): Promise<number> {
    this.ticking ??= this.runFinders(now).finally(() => {
      this.ticking = undefined;
    });
    return this.ticking;
  }

  private async runFinders(now: Date): Promise<number> {
    let queued = 0;
    for (const [name, finder] of this.finders) {
      try {
        queued += await this.options.dataSource.transaction((tx) => finder(tx, now));
      } catch (error) {
        this.options.logger.error('scheduler tick failed', { finder: name, error });
      }
    }
    if (queued > 0) {
      this.options.logger.info('scheduled jobs queued', { queued });
      this.options.onQueued?.();
    }
    return queued;
  }
}
