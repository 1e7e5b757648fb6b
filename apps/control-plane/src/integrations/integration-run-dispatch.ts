import type { EntityManager } from 'typeorm';
import { conflict } from '../http/api-errors';
import type { JobEntity, JobTrigger } from '../jobs/job.entity';
import type { JobService } from '../jobs/job.service';
import { IntegrationEntity } from './integration.entity';

/**
 * Queues a run of the integration and marks it pending in the same transaction; like syncs, at
 * most one is queued or running (a second trigger is a 409 run_already_active).
 */
export async function dispatchIntegrationRun(
  jobs: JobService,
  integration: IntegrationEntity,
  trigger: JobTrigger,
  manager?: EntityManager,
): Promise<JobEntity> {
  return jobs.dispatch(
    {
      owner: { sourceId: null, integrationId: integration.id, kind: 'integration_run' },
      accountId: integration.accountId,
      conflict: () =>
        conflict('run_already_active', `Integration ${integration.id} already has a queued or running run`),
      onQueued: async (tx, job) => {
        const pending = { latestJobId: job.id, status: 'pending' as const };
        await tx.getRepository(IntegrationEntity).update({ id: integration.id }, pending);
        Object.assign(integration, pending);
      },
    },
    trigger,
    manager,
  );
}
