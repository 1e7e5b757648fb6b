import type { EntityManager } from 'typeorm';
import { conflict } from '../http/api-errors';
import type { JobEntity, JobTrigger } from '../jobs/job.entity';
import type { JobService } from '../jobs/job.service';
import { SourceEntity } from './source.entity';

/**
 * Queues a sync of the source and marks the source queued in the same transaction. At most one
 * job per source is queued or running; a second trigger is a 409 sync_already_active.
 */
export async function dispatchSourceSync(
  jobs: JobService,
  source: SourceEntity,
  trigger: JobTrigger,
  manager?: EntityManager,
): Promise<JobEntity> {
  return jobs.dispatch(
    {
      owner: { sourceId: source.id, integrationId: null, kind: 'source_sync' },
      accountId: source.accountId,
      conflict: () =>
        conflict('sync_already_active', `Source ${source.id} already has a queued or running sync`),
      onQueued: async (tx, job) => {
        const queued = {
          latestJobId: job.id,
          activeImportJobId: job.id,
          integrationStatus: 'queued' as const,
        };
        await tx.getRepository(SourceEntity).update({ id: source.id }, queued);
        Object.assign(source, queued);
      },
    },
    trigger,
    manager,
  );
}
