import type { EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import { nextRunAt } from '@pipeline/schedules';
import type { DueFinder } from '../jobs/scheduler';
import type { JobService } from '../jobs/job.service';
import { dispatchSourceSync } from './source-sync-dispatch';
import { returnedRows } from '../database/returned-rows';
import { SourceEntity } from './source.entity';

/** Sources looked at per scheduler tick; the rest wait for the next tick. */
const BATCH = 200;

/** Refusals that skip a slot instead of failing the tick. */
const skipped = ['sync_already_active', 'account_limit_reached'];

/**
 * When the scheduler next queues a sync of the source: the first anchored slot after `after`
 * (see libs/schedules for daylight-saving gaps and overlaps); null when it is not scheduled
 * (one-off, paused or deleted).
 */
export function nextSyncOf(source: SourceEntity, after: Date): Date | null {
  if (source.oneOff || source.state !== 'active') return null;
  return nextRunAt(
    {
      frequencyValue: source.syncFrequencyValue,
      frequencyUnit: source.syncFrequencyUnit,
      anchorTime: source.syncAnchorTime,
      anchorTimezone: source.syncAnchorTimezone,
    },
    after,
    source.createdAt,
  );
}

/**
 * Queues a `schedule` sync for every active source whose slot has come, then moves its slot on.
 * A slot that finds a sync already queued or running is skipped, not stacked: the running sync
 * reads up to now anyway. Several slots missed while no control plane ran collapse into one sync.
 */
export function dueSources(jobs: JobService): DueFinder {
  return async (tx: EntityManager, now: Date) => {
    const due = returnedRows<{ id: string }>(
      await tx.query(
        `SELECT id FROM sources
          WHERE state = 'active' AND NOT one_off AND (next_sync_at IS NULL OR next_sync_at <= $1)
          ORDER BY next_sync_at NULLS FIRST
          FOR UPDATE SKIP LOCKED LIMIT ${BATCH}`,
        [now],
      ),
    );
    const repository = tx.getRepository(SourceEntity);
    let queued = 0;
    for (const { id } of due) {
      const source = await repository.findOneByOrFail({ id });
      // A source from before the scheduler existed gets its next slot, not an immediate sync.
      if (source.nextSyncAt !== null) {
        try {
          await dispatchSourceSync(jobs, source, 'schedule', tx);
          queued += 1;
        } catch (error) {
          // A slot of an account whose queue is full is skipped like one whose sync still runs.
          if (!(error instanceof AppError && skipped.includes(error.code))) throw error;
        }
      }
      await repository.update(id, { nextSyncAt: nextSyncOf(source, now) });
    }
    return queued;
  };
}
