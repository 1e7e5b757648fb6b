import { AccountLimiter } from '../accounts/account-limits';
import { In, type DataSource, type EntityManager } from 'typeorm';
import { conflict, notFound } from '../http/api-errors';
import { requireId } from '../http/ids';
import { pageOf } from '../http/list-query';
import type { ListResponse, PageRequest, SortOrder } from '../http/pagination';
import type { JobView } from './job.dto';
import {
  accountJobKinds,
  JobEntity,
  type AccountJobKind,
  type JobStatus,
  type JobTrigger,
} from './job.entity';
import type { JobTransition } from './job-executor';
import { toJobView } from './job-view';
import { returnedRows } from '../database/returned-rows';

const UNIQUE_VIOLATION = '23505';

/**
 * A job to queue, as its owner (a source or an integration) describes it: the owner knows its
 * own row and its conflict's wording; the jobs table knows neither.
 */
export interface JobDispatch {
  owner: Pick<JobEntity, 'sourceId' | 'integrationId' | 'kind'>;
  accountId: string;
  /** The error when the owner already has a queued or running job. */
  conflict: () => Error;
  /** Records the queued job on the owner's row, in the job's transaction. */
  onQueued: (tx: EntityManager, job: JobEntity) => Promise<void>;
}

/** Records a job's new state on its owner (a source or an integration), in the job's transaction. */
export type OwnerTransition = (tx: EntityManager, job: JobEntity, transition: JobTransition) => Promise<void>;

/** Creates jobs, and lists them for clients following their syncs; the sync engine runs them. */
export class JobService {
  private readonly owners = new Map<AccountJobKind, OwnerTransition>();

  constructor(
    private readonly dataSource: DataSource,
    /** Called once a queued job is committed, so an in-process job runner claims it at once. */
    readonly notifyQueued: () => void = () => undefined,
    private readonly limiter: AccountLimiter = new AccountLimiter(),
    /** Called once a cancel is committed, so an in-process job runner stops the job at once. */
    private readonly notifyCancelled: (jobId: string) => void = () => undefined,
  ) {}

  /** How the owners of `kind` follow a cancel by request (sources and integrations register theirs). */
  followCancels(kind: AccountJobKind, owner: OwnerTransition): this {
    this.owners.set(kind, owner);
    return this;
  }

  /** A source's jobs, newest first by default. The caller has checked the source is the account's. */
  listForSource(
    accountId: string,
    sourceId: string,
    filter: { status?: JobStatus; order?: SortOrder },
    page: PageRequest,
  ): Promise<ListResponse<JobView>> {
    return this.listFor(accountId, { sourceId }, filter, page);
  }

  /** An integration's runs, newest first by default. The caller has checked the integration is the account's. */
  listForIntegration(
    accountId: string,
    integrationId: string,
    filter: { status?: JobStatus; order?: SortOrder },
    page: PageRequest,
  ): Promise<ListResponse<JobView>> {
    return this.listFor(accountId, { integrationId }, filter, page);
  }

  private listFor(
    accountId: string,
    owner: { sourceId: string } | { integrationId: string },
    filter: { status?: JobStatus; order?: SortOrder },
    page: PageRequest,
  ): Promise<ListResponse<JobView>> {
    const qb = this.dataSource
      .getRepository(JobEntity)
      .createQueryBuilder('job')
      .where('job.accountId = :accountId', { accountId });
    if ('sourceId' in owner) qb.andWhere('job.sourceId = :sourceId', { sourceId: owner.sourceId });
    else qb.andWhere('job.integrationId = :integrationId', { integrationId: owner.integrationId });
    if (filter.status) qb.andWhere('job.status = :status', { status: filter.status });
    return pageOf(qb, 'createdAt', filter.order, page, toJobView);
  }

  /**
   * One job of the account; another account's job is a 404 like an unknown one, and so is a
   * warehouse move's: the operator's, answered by the operator API.
   */
  async get(accountId: string, jobId: string): Promise<JobView> {
    const id = requireId('job', jobId);
    const job = await this.dataSource
      .getRepository(JobEntity)
      .findOneBy({ id, accountId, kind: In(accountJobKinds) });
    if (!job) throw notFound('job', jobId);
    return toJobView(job);
  }

  /**
   * `POST /jobs/{id}/cancel`: a queued job is cancelled at once and never starts; a running one
   * is cancelled too, and its worker, which may write nothing once the job is not its own any
   * more, stops at its next heartbeat or progress write (at once when it runs in this process).
   * Rows read and written so far stay as the worker last saved them. The owner becomes idle
   * (its last sync and error kept). A job that already ended is 409 `job_finished`; another
   * account's, 404. The caller has checked the key's scope for the job's kind (`get`).
   */
  async cancel(accountId: string, jobId: string): Promise<JobView> {
    const id = requireId('job', jobId);
    const cancelled = await this.dataSource.transaction(async (tx) => {
      const [row] = returnedRows<{ id: string }>(
        await tx.query(
          `UPDATE jobs SET status = 'cancelled', worker_id = NULL, heartbeat_at = NULL,
                  finished_at = now(), updated_at = now(),
                  error = jsonb_build_object('code', 'cancelled', 'message', 'Cancelled by request')
            WHERE id = $1 AND account_id = $2 AND kind = ANY($3) AND status IN ('queued', 'running')
            RETURNING id`,
          [id, accountId, [...accountJobKinds]],
        ),
      );
      const job = await tx.getRepository(JobEntity).findOneBy({ id, accountId, kind: In(accountJobKinds) });
      if (!job) throw notFound('job', jobId);
      if (!row)
        throw conflict(
          'job_finished',
          `Job ${job.id} is ${job.status} already; only a queued or running job can be cancelled`,
        );
      await this.owners.get(job.kind as AccountJobKind)?.(tx, job, { to: 'cancelled' });
      return job;
    });
    this.notifyCancelled(cancelled.id);
    return toJobView(cancelled);
  }

  /**
   * Cancels the owner's queued or running job (it was paused or deleted). A running job's
   * worker notices at its next heartbeat or progress write and stops without writing.
   */
  async cancelActive(
    owner: { sourceId: string } | { integrationId: string },
    reason: string,
    tx: EntityManager,
  ): Promise<string[]> {
    const [column, id] =
      'sourceId' in owner ? ['source_id', owner.sourceId] : ['integration_id', owner.integrationId];
    const rows = returnedRows<{ id: string }>(
      await tx.query(
        `UPDATE jobs SET status = 'cancelled', worker_id = NULL, heartbeat_at = NULL,
                finished_at = now(), updated_at = now(),
                error = jsonb_build_object('code', 'cancelled', 'message', $2::text)
          WHERE ${column} = $1 AND status IN ('queued', 'running') RETURNING id`,
        [id, reason],
      ),
    );
    return rows.map((r) => r.id);
  }

  /**
   * Queues a job for its owner. At most one job per owner is queued or running: the database's
   * partial unique index decides, so two simultaneous triggers cannot both win (`conflict` is
   * thrown). `onQueued` records the job on the owner's row in the same transaction.
   */
  async dispatch(request: JobDispatch, trigger: JobTrigger, manager?: EntityManager): Promise<JobEntity> {
    const run = async (tx: EntityManager) => {
      const job = await this.insert(tx, request.owner, request.accountId, trigger, request.conflict);
      await request.onQueued(tx, job);
      return job;
    };
    return manager ? run(manager) : this.dataSource.transaction(run);
  }

  private async insert(
    tx: EntityManager,
    owner: Pick<JobEntity, 'sourceId' | 'integrationId' | 'kind'>,
    accountId: string,
    trigger: JobTrigger,
    onConflict: () => Error,
  ): Promise<JobEntity> {
    await this.limiter.reserve(tx, accountId, 'queued_runs');
    const job = tx.getRepository(JobEntity).create({
      ...owner,
      accountId,
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
        throw onConflict();
      }
      throw error;
    }
    return tx.getRepository(JobEntity).findOneByOrFail({ id: job.id });
  }
}
