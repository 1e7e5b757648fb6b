import { In, type DataSource, type EntityManager } from 'typeorm';
import { destinationCategoryOf, forwarderFor } from '@pipeline/catalog';
import type { RegulatedSubjects } from '@pipeline/tenancy';
import {
  DeliveryFailure,
  type ChangedRow,
  type ChangeRequest,
  type Forwarder,
  type OutboundEvent,
} from '@pipeline/destinations';
import type { TrackingEvent } from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { AppError } from '@pipeline/errors';
import { AppEntity } from '../apps/app.entity';
import type { CredentialCipher } from '../apps/credential-cipher';
import type { JobEntity } from '../jobs/job.entity';
import {
  JobDeferred,
  JobFailure,
  TransientJobError,
  type JobContext,
  type JobCounts,
  type JobExecutor,
  type JobTransition,
} from '../jobs/job-executor';
import type { JobService } from '../jobs/job.service';
import { dispatchSourceSync } from '../sources/source-sync-dispatch';
import { SourceEntity } from '../sources/source.entity';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import { isWarehouseUnavailable } from '../http/api-errors';
import { returnedRows } from '../database/returned-rows';
import { checkStreamTableName } from '../warehouse-access/warehouse-names';
import { ownerFieldsAfter, type OwnerStatuses } from '../jobs/owner-status';
import { IntegrationEntity, type IntegrationRunStatus } from './integration.entity';
import { scheduledTasks, type ScheduledTask } from './integration-tasks';
import { resolvedDestination } from './resolved-destination';

export interface IntegrationRunOptions {
  dataSource: DataSource;
  warehouse: AccountWarehouses;
  cipher: CredentialCipher;
  jobs: JobService;
  logger: Logger;
  /** Vendor base URLs by app type (proxies, sandboxes, tests). */
  baseUrls?: Partial<Record<string, string>>;
  /** Private ranges a tenant URL may reach all the same (EGRESS_ALLOW_PRIVATE_RANGES). */
  allowPrivateRanges?: readonly string[];
  /** How long a run waits for the source data it needs before it looks again. */
  dependencyRetryMs: number;
  /** Rows read and sent per batch; the task's watermark moves after each accepted batch. */
  batchRows?: number;
  /**
   * The account's privacy regulations (docs/privacy.md): a row of a suppressed subject, or of a
   * deleted one changed at or before its cut-off, is not sent. Throws when they cannot be read:
   * the run is then retried rather than send what may be regulated.
   */
  regulationOf(accountId: string): Promise<Pick<RegulatedSubjects, 'decide'>>;
}

/** Where a task's last accepted batch ended: the row's change time (exact, as text) and key. */
interface Watermark {
  at: string;
  key: string;
}

interface SourceRow {
  at: string;
  key: string;
  /** null: nothing to send for this row (a stream row without the user id field). */
  event: TrackingEvent | null;
}

const integrationStatuses: OwnerStatuses<IntegrationRunStatus> = {
  running: 'running',
  queued: 'pending',
  succeeded: 'completed',
  failed: 'errored',
  paused: 'paused',
  idle: 'pending',
};

/** What an integration records when its run changes state (the job runner's, and a cancel by request). */
export async function recordIntegrationJobTransition(
  tx: EntityManager,
  job: JobEntity,
  transition: JobTransition,
): Promise<void> {
  if (!job.integrationId) return;
  const integrations = tx.getRepository(IntegrationEntity);
  const integration = await integrations.findOneBy({ id: job.integrationId });
  if (!integration) return;
  const fields = ownerFieldsAfter(
    transition,
    { paused: integration.state !== 'active', consecutiveFailures: integration.consecutiveFailures },
    integrationStatuses,
  );
  await integrations.update(integration.id, fields);
}

const atText = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * Runs an integration: each scheduled task reads what changed in the account's warehouse since
 * its watermark, in batches ordered by (change time, key), sends each batch with the
 * destination's real client, and moves the watermark only once the vendor accepted the batch.
 * A rerun therefore sends only what is new; a batch cut short by a failure is sent again
 * (at least once), with the same message ids, so vendors that deduplicate do so.
 */
export class IntegrationRunExecutor implements JobExecutor {
  readonly kind = 'integration_run' as const;

  constructor(private readonly options: IntegrationRunOptions) {}

  async execute({ job, signal, progress }: JobContext): Promise<JobCounts> {
    const { dataSource } = this.options;
    const integration = await dataSource
      .getRepository(IntegrationEntity)
      .findOneBy({ id: job.integrationId ?? '' });
    if (!integration || integration.state !== 'active')
      throw new JobFailure('integration_not_active', `Integration ${job.integrationId ?? ''} is not active`);
    const apps = new Map(
      (
        await dataSource.getRepository(AppEntity).findBy({
          id: In([integration.destinationAppId, integration.sourceAppId].filter((id) => id !== null)),
        })
      ).map((app) => [app.id, app]),
    );
    const sourceApp = integration.sourceAppId ? apps.get(integration.sourceAppId) : undefined;
    const tasks = scheduledTasks(integration.config.tasks, sourceApp?.appType ?? null);
    if (tasks.some((task) => task.type === 'source_stream')) await this.awaitImport(integration, job);
    const { destination, forwarder } = this.destinationOf(
      integration,
      apps.get(integration.destinationAppId),
    );

    const counts: JobCounts = { rowsRead: 0, rowsWritten: 0 };
    try {
      await this.sendTasks(integration, tasks, sourceApp?.appType ?? '', { destination, forwarder }, job, {
        signal,
        progress,
        counts,
      });
    } catch (error) {
      // An outage of the warehouse passes: the run is retried with backoff, and if its attempts
      // run out it fails with the documented code rather than the driver's message.
      if (isWarehouseUnavailable(error))
        throw new TransientJobError(error.code, error.message, String(error.cause));
      throw error;
    }
    return counts;
  }

  private async sendTasks(
    integration: IntegrationEntity,
    tasks: ScheduledTask[],
    sourceAppType: string,
    { destination, forwarder }: { destination: ResolvedDestination; forwarder: Forwarder },
    job: JobEntity,
    { signal, progress, counts }: Pick<JobContext, 'signal' | 'progress'> & { counts: JobCounts },
  ): Promise<void> {
    const { engine, account } = await this.options.warehouse.locate(integration.accountId);
    for (const task of tasks) {
      const read = this.changesOf(
        integration,
        task,
        await this.watermarkOf(integration, task),
        sourceAppType,
      );
      const batches = await engine.readChanges(account, read.request, {
        purpose: 'query',
        batchRows: this.options.batchRows ?? 500,
        signal,
      });
      if (!batches) continue;
      for await (const batch of batches) {
        const rows = batch.map(read.toRow);
        counts.rowsRead += rows.length;
        const sent = await this.send(
          forwarder,
          destination,
          await this.unregulated(integration, rows),
          signal,
        );
        counts.rowsWritten += sent;
        const last = rows[rows.length - 1];
        await progress(
          counts,
          last
            ? (tx) =>
                this.saveWatermark(tx, integration.id, task, { at: last.at, key: last.key }, sent, job.id)
            : undefined,
        );
      }
    }
  }

  onTransition(tx: EntityManager, job: JobEntity, transition: JobTransition): Promise<void> {
    return recordIntegrationJobTransition(tx, job, transition);
  }

  /**
   * The source data a `source_stream` task needs: ready once an active source of the
   * integration's source app has synced. Until then the run waits (it is deferred, not
   * failed), and a source that never started a sync is given one.
   */
  private async awaitImport(integration: IntegrationEntity, job: JobEntity): Promise<void> {
    const sources = await this.options.dataSource
      .getRepository(SourceEntity)
      .findBy({ accountId: integration.accountId, appId: integration.sourceAppId ?? '', state: 'active' });
    if (sources.some((source) => source.lastSyncAt !== null)) return;
    for (const source of sources.filter((s) => s.activeImportJobId === null && s.latestJobId === null)) {
      let triggered;
      try {
        triggered = await dispatchSourceSync(this.options.jobs, source, 'onboarding');
      } catch (error) {
        // The account's queue is full: the run waits and asks again at its next attempt.
        if (error instanceof AppError && error.code === 'account_limit_reached') continue;
        throw error;
      }
      this.options.jobs.notifyQueued();
      this.options.logger.info('integration run triggered an import', {
        jobId: job.id,
        importJobId: triggered.id,
      });
    }
    throw new JobDeferred(
      sources.length === 0 ? 'missing_source' : 'waiting_for_import',
      new Date(Date.now() + this.options.dependencyRetryMs),
    );
  }

  private destinationOf(
    integration: IntegrationEntity,
    app: AppEntity | undefined,
  ): { destination: ResolvedDestination; forwarder: Forwarder } {
    if (!app || app.state !== 'active' || !app.credentialsCiphertext || !app.credentialsKeyId)
      throw new JobFailure(
        'destination_not_ready',
        'The destination app is not active or has no credentials',
      );
    const kind = destinationCategoryOf(app.appType);
    const forwarder = forwarderFor(app.appType, {
      ...(this.options.baseUrls ? { baseUrls: this.options.baseUrls } : {}),
      ...(this.options.allowPrivateRanges ? { allowPrivateRanges: this.options.allowPrivateRanges } : {}),
    });
    if (!kind || !forwarder)
      throw new JobFailure('no_destination_client', `This version cannot send to ${app.appType}`);
    return {
      forwarder,
      destination: resolvedDestination(
        integration,
        app,
        kind,
        this.options.cipher.open(
          { ciphertext: app.credentialsCiphertext, keyId: app.credentialsKeyId },
          `app:${app.id}`,
        ),
      ),
    };
  }

  /** The rows no regulation of the account holds back (by the row's change time, its received_at). */
  private async unregulated(integration: IntegrationEntity, rows: SourceRow[]): Promise<SourceRow[]> {
    let regulation: Pick<RegulatedSubjects, 'decide'>;
    try {
      regulation = await this.options.regulationOf(integration.accountId);
    } catch (error) {
      throw new TransientJobError(
        'regulations_unavailable',
        "The account's privacy regulations could not be read; nothing was sent",
        error instanceof Error ? error.message : String(error),
      );
    }
    return rows.filter((row) => {
      if (!row.event) return true;
      const at = Date.parse(row.at);
      // A time that does not read counts as the oldest: a deleted subject's row is held back.
      return regulation.decide(row.event, Number.isNaN(at) ? 0 : at) === null;
    });
  }

  /** Delivery failures as job outcomes: retryable ones retry the run later, others fail it. */
  private async send(
    forwarder: Forwarder,
    destination: ResolvedDestination,
    rows: SourceRow[],
    signal: AbortSignal,
  ): Promise<number> {
    const receivedAt = new Date();
    const events: OutboundEvent[] = rows.flatMap((row) =>
      row.event ? [{ event: row.event, receipt: { receivedAt, ip: null, userAgent: null } }] : [],
    );
    if (events.length === 0) return 0;
    try {
      const outcome = await forwarder.send(destination, events, signal);
      return outcome.sent;
    } catch (error) {
      if (error instanceof DeliveryFailure) {
        // The reason already names the app type ("braze: http_503").
        const message = error.reason;
        if (error.retryable) throw new TransientJobError('destination_unavailable', message, error.detail);
        throw new JobFailure('destination_rejected', message, error.detail);
      }
      throw error;
    }
  }

  private async watermarkOf(integration: IntegrationEntity, task: ScheduledTask): Promise<Watermark> {
    const [saved] = returnedRows<{ at: string; key: string }>(
      await this.options.dataSource.query(
        `SELECT ${atText('at')} AS at, key FROM integration_watermarks
          WHERE integration_id = $1 AND task_index = $2 AND task_type = $3`,
        [integration.id, task.index, task.type],
      ),
    );
    if (saved) return saved;
    // The first run takes nothing older than historicalSyncStartDate.
    return { at: (integration.historicalSyncStartDate ?? new Date(0)).toISOString(), key: '' };
  }

  /** In `tx` of the job's progress, so a run that no longer owns its job moves no watermark. */
  private async saveWatermark(
    tx: EntityManager,
    integrationId: string,
    task: ScheduledTask,
    watermark: Watermark,
    sent: number,
    jobId: string,
  ): Promise<void> {
    // A task replaced at the same index starts over: the key includes its type.
    await tx.query(
      `INSERT INTO integration_watermarks (integration_id, task_index, task_type, at, key, rows_sent, last_job_id)
       VALUES ($1, $2, $3, $4::timestamptz, $5, $6, $7)
       ON CONFLICT (integration_id, task_index) DO UPDATE SET
         task_type = EXCLUDED.task_type, at = EXCLUDED.at, key = EXCLUDED.key,
         rows_sent = CASE WHEN integration_watermarks.task_type = EXCLUDED.task_type
                          THEN integration_watermarks.rows_sent + EXCLUDED.rows_sent
                          ELSE EXCLUDED.rows_sent END,
         last_job_id = EXCLUDED.last_job_id, updated_at = now()`,
      [integrationId, task.index, task.type, watermark.at, watermark.key, sent, jobId],
    );
  }

  /**
   * What the task reads (the rows changed since the watermark, in (change time, key) order) and
   * what each changed row sends.
   */
  private changesOf(
    integration: IntegrationEntity,
    task: ScheduledTask,
    watermark: Watermark,
    sourceAppType: string,
  ): { request: ChangeRequest; toRow: (change: ChangedRow) => SourceRow } {
    const tag = integration.id.slice(0, 8);

    if (task.type === 'user_attributes') {
      return {
        request: { kind: 'users', since: watermark },
        toRow: ({ at, key, row: raw }) => {
          const row = raw as { anonymous_id: string | null; traits: Record<string, unknown> | null };
          return {
            at,
            key,
            event: {
              type: 'identify',
              messageId: `int-${tag}-u-${key}-${at}`.slice(0, 200),
              timestamp: at,
              anonymousId: row.anonymous_id ?? key,
              userId: key,
              traits: pick(row.traits ?? {}, task.fields),
            },
          };
        },
      };
    }

    if (task.type === 'recent_events') {
      return {
        request: {
          kind: 'events',
          since: watermark,
          receivedSince: new Date(Date.now() - integration.schedule.rollingWindowDays * 86_400_000),
          names: task.events,
        },
        toRow: ({ at, key, row: raw }) => {
          const row = raw as {
            type: 'track' | 'page';
            event: string | null;
            name: string | null;
            properties: Record<string, unknown> | null;
            anonymous_id: string | null;
            user_id: string | null;
            timestamp: string | null;
          };
          const common = {
            messageId: key,
            timestamp: row.timestamp ?? at,
            anonymousId: row.anonymous_id ?? row.user_id ?? key,
            ...(row.user_id ? { userId: row.user_id } : {}),
            properties: row.properties ?? {},
          };
          const event: TrackingEvent =
            row.type === 'page'
              ? { ...common, type: 'page', ...(row.name ? { name: row.name } : {}) }
              : { ...common, type: 'track', event: row.event ?? '' };
          return { at, key, event };
        },
      };
    }

    return {
      request: {
        kind: 'stream',
        table: checkStreamTableName(`${sourceAppType}_${task.stream}`),
        since: watermark,
      },
      toRow: ({ at, key, row: raw }) => {
        const userId = raw[task.userIdField];
        if (userId === null || userId === undefined || userId === '') return { at, key, event: null };
        const traits = Object.fromEntries(
          Object.entries(raw).filter(([, value]) => value === null || typeof value !== 'object'),
        );
        return {
          at,
          key,
          event: {
            type: 'identify' as const,
            messageId: `int-${tag}-${task.stream}-${key}-${at}`.slice(0, 200),
            timestamp: at,
            anonymousId: String(userId),
            userId: String(userId),
            traits,
          },
        };
      },
    };
  }
}

function pick(traits: Record<string, unknown>, fields: string[] | null): Record<string, unknown> {
  if (!fields) return traits;
  return Object.fromEntries(fields.filter((f) => Object.hasOwn(traits, f)).map((f) => [f, traits[f]]));
}
