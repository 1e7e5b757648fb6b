import type { DataSource, EntityManager } from 'typeorm';
import { connectorFor } from '@pipeline/catalog';
import { ConnectorError, type Connector, type HttpReaderOptions } from '@pipeline/connectors';
import type { Logger } from '@pipeline/logger';
import { AppEntity } from '../apps/app.entity';
import type { CredentialCipher } from '../apps/credential-cipher';
import type { JobEntity } from '../jobs/job.entity';
import {
  JobFailure,
  TransientJobError,
  type JobContext,
  type JobCounts,
  type JobExecutor,
  type JobTransition,
} from '../jobs/job-executor';
import { ownerFieldsAfter, type OwnerStatuses } from '../jobs/owner-status';
import { SourceEntity, type IntegrationStatus } from './source.entity';
import { StreamStates } from './stream-states';
import { isWarehouseUnavailable } from '../http/api-errors';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';

export interface SourceSyncOptions {
  dataSource: DataSource;
  /** Where each account's warehouse is: stream tables are written through its engine. */
  warehouse: AccountWarehouses;
  cipher: CredentialCipher;
  logger: Logger;
  /** Base URL per app type, to point a connector at a proxy or a test server. */
  baseUrls?: Partial<Record<string, string>>;
  /** Private ranges a tenant-named host may reach all the same (EGRESS_ALLOW_PRIVATE_RANGES). */
  allowPrivateRanges?: readonly string[];
  /** The connectors' per-request retries (429, 5xx) before a job-level retry. */
  http?: HttpReaderOptions;
  /** Rows loaded per warehouse write; the stream's cursor is saved after each. */
  flushRows?: number;
}

const sourceStatuses: OwnerStatuses<IntegrationStatus> = {
  running: 'syncing',
  queued: 'queued',
  succeeded: 'succeeded',
  failed: 'failed',
  paused: 'paused',
  idle: 'pending',
};

/**
 * What a source records when its sync job changes state (the job runner's transitions, and a
 * cancel by request): its status, last sync and error, and whether the job is its active import.
 */
export async function recordSourceJobTransition(
  tx: EntityManager,
  job: JobEntity,
  transition: JobTransition,
): Promise<void> {
  if (!job.sourceId) return;
  const sources = tx.getRepository(SourceEntity);
  const source = await sources.findOneBy({ id: job.sourceId });
  if (!source) return;
  const { status, ...rest } = ownerFieldsAfter(
    transition,
    { paused: source.state !== 'active', consecutiveFailures: source.consecutiveFailures },
    sourceStatuses,
  );
  // The queued or running job is the active import; one that ended is not.
  const active =
    transition.to === 'running' ? {} : { activeImportJobId: transition.to === 'queued' ? job.id : null };
  await sources.update(source.id, { integrationStatus: status, ...rest, ...active });
}

/**
 * Runs a warehouse call with the driver's own error: a sync's warehouse failure is shown to the
 * tenant as an internal error with a reference, its detail logged, not as the API's 503.
 */
async function withDriverError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw isWarehouseUnavailable(error) && error.cause !== undefined ? error.cause : error;
  }
}

/** The warehouse table of a source stream: `<app type>_<stream>` in the account's schema. */
export function streamTable(appType: string, stream: string): string {
  return `${appType}_${stream}`;
}

/**
 * Imports a source's streams into the warehouse. For each stream chosen in `importTasks` it
 * reads from the saved cursor (the first read from `historicalSyncStartDate`, later reads
 * moved back by the rolling window), upserts the rows on the stream's primary key, and saves
 * the cursor only after the rows it covers are written, so a crash re-reads at most one batch
 * and the upsert keeps that from duplicating anything.
 */
export class SourceSyncExecutor implements JobExecutor {
  readonly kind = 'source_sync' as const;

  constructor(private readonly options: SourceSyncOptions) {}

  async execute({ job, signal, progress }: JobContext): Promise<JobCounts> {
    const { dataSource, warehouse, logger } = this.options;
    const source = await dataSource.getRepository(SourceEntity).findOneBy({ id: job.sourceId ?? '' });
    if (!source || source.state !== 'active')
      throw new JobFailure('source_not_active', `Source ${job.sourceId ?? ''} is not active`);
    const connector = await this.connectorOf(source);
    await guarded(() => connector.check(signal));

    const offered = new Map(connector.streams.map((s) => [s.name, s]));
    const unsupported = source.importTasks.filter((task) => !offered.has(task));
    if (unsupported.length > 0)
      throw new JobFailure('unsupported_stream', `This version cannot import: ${unsupported.join(', ')}`);

    const states = new StreamStates(dataSource.manager);
    const saved = await states.forSource(source.id);
    const { engine, account } = await withDriverError(() => warehouse.locate(source.accountId));
    const flushRows = this.options.flushRows ?? 5000;
    const counts: JobCounts = { rowsRead: 0, rowsWritten: 0 };
    for (const stream of source.importTasks) {
      const spec = offered.get(stream);
      if (!spec) continue;
      const table = streamTable(connector.appType, stream);
      let buffer: Record<string, unknown>[] = [];
      let cursor: string | null = null;
      const flush = async () => {
        const { written } = buffer.length
          ? await withDriverError(() => engine.writeStream(account, table, spec.primaryKey, buffer))
          : { written: 0 };
        counts.rowsWritten += written;
        buffer = [];
        // The cursor moves only while the job is this worker's: a stale run must not move it
        // under the run that took the job over.
        await progress(counts, (tx) => new StreamStates(tx).save(source.id, stream, cursor, written, job.id));
      };
      const pages = connector.read(stream, {
        cursor: saved.get(stream)?.cursor ?? null,
        ...(source.historicalSyncStartDate ? { startDate: source.historicalSyncStartDate } : {}),
        ...(source.rollingPeriodDays > 0 ? { rollingPeriodHours: source.rollingPeriodDays * 24 } : {}),
        signal,
      });
      await guarded(async () => {
        for await (const page of pages) {
          buffer.push(...page.records);
          counts.rowsRead += page.records.length;
          if (page.cursor !== null) cursor = page.cursor;
          if (buffer.length >= flushRows) await flush();
        }
      });
      await flush();
      logger.info('source stream synced', { jobId: job.id, sourceId: source.id, stream, ...counts });
    }
    return counts;
  }

  onTransition(tx: EntityManager, job: JobEntity, transition: JobTransition): Promise<void> {
    return recordSourceJobTransition(tx, job, transition);
  }

  private async connectorOf(source: SourceEntity): Promise<Connector> {
    const app = await this.options.dataSource.getRepository(AppEntity).findOneBy({ id: source.appId });
    if (!app || app.state === 'deleted')
      throw new JobFailure('app_not_found', `The source's app ${source.appId} is deleted`);
    const credentials =
      app.credentialsCiphertext && app.credentialsKeyId
        ? this.options.cipher.open(
            { ciphertext: app.credentialsCiphertext, keyId: app.credentialsKeyId },
            `app:${app.id}`,
          )
        : {};
    const connector = await guarded(async () =>
      connectorFor(
        { appType: app.appType, credentials, config: { ...app.config, ...source.config } },
        {
          ...this.options.http,
          ...(this.options.baseUrls ? { baseUrls: this.options.baseUrls } : {}),
          ...(this.options.allowPrivateRanges ? { allowPrivateRanges: this.options.allowPrivateRanges } : {}),
        },
      ),
    );
    if (!connector)
      throw new JobFailure('no_connector', `This version has no connector that imports from ${app.appType}`);
    return connector;
  }
}

/** Connector errors as job outcomes: retryable ones are retried by the job runner, others fail the job. */
async function guarded<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (error) {
    if (error instanceof ConnectorError) {
      if (error.retryable) throw new TransientJobError(error.code, error.message, error.detail);
      throw new JobFailure(error.code, error.message, error.detail);
    }
    throw error;
  }
}
