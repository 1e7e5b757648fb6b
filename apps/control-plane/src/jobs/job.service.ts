import type { DataSource, EntityManager } from 'typeorm';
import { conflict } from '../http/api-errors';
import { SourceEntity } from '../sources/source.entity';
import { JobEntity, type JobTrigger } from './job.entity';

const UNIQUE_VIOLATION = '23505';

/** Creates jobs; the sync engine runs them. */
export class JobService {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Queues a sync of the source. At most one job per source is queued or running: the
   * database's partial unique index decides, so two simultaneous triggers cannot both win.
   */
  async dispatchSourceSync(
    source: SourceEntity,
    trigger: JobTrigger,
    manager?: EntityManager,
  ): Promise<JobEntity> {
    const run = async (tx: EntityManager) => {
      const job = tx.getRepository(JobEntity).create({
        accountId: source.accountId,
        sourceId: source.id,
        integrationId: null,
        kind: 'source_sync',
        trigger,
        status: 'queued',
        rowsRead: 0,
        rowsWritten: 0,
        error: null,
        startedAt: null,
        finishedAt: null,
      });
      try {
        await tx.query('SAVEPOINT dispatch');
        await tx.getRepository(JobEntity).insert(job);
      } catch (error) {
        if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
          await tx.query('ROLLBACK TO SAVEPOINT dispatch');
          throw conflict('sync_already_active', `Source ${source.id} already has a queued or running sync`);
        }
        throw error;
      }
      await tx
        .getRepository(SourceEntity)
        .update(
          { id: source.id },
          { latestJobId: job.id, activeImportJobId: job.id, integrationStatus: 'queued' },
        );
      source.latestJobId = job.id;
      source.activeImportJobId = job.id;
      source.integrationStatus = 'queued';
      return tx.getRepository(JobEntity).findOneByOrFail({ id: job.id });
    };
    return manager ? run(manager) : this.dataSource.transaction(run);
  }
}
