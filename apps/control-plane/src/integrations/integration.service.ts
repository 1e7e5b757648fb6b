import { AccountLimiter } from '../accounts/account-limits';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import type { DataSource } from 'typeorm';
import { In } from 'typeorm';
import { AppEntity } from '../apps/app.entity';
import type { AppService } from '../apps/app.service';
import { keepMaskedSecrets, maskSecretFields } from '../apps/secret-masking';
import { recipientOrigin, secretRequiredForNewHost, TenantUrlPolicy } from '../apps/tenant-urls';
import { conflict, invalidField } from '../http/api-errors';
import { findInAccount, softDelete } from '../database/account-resource';
import { iso, isoOrNull, pageOf, whereState } from '../http/list-query';
import type { ListResponse, PageRequest, SortOrder } from '../http/pagination';
import type { ResourceState } from '../http/resource-state';
import type { JobView } from '../jobs/job.dto';
import type { JobStatus } from '../jobs/job.entity';
import type { JobService } from '../jobs/job.service';
import { dispatchIntegrationRun } from './integration-run-dispatch';
import { toJobView } from '../jobs/job-view';
import { SourceEntity } from '../sources/source.entity';
import { hasScheduledWork, nextRunOf } from './integration-schedule';
import { scheduledTasks } from './integration-tasks';
import type {
  CreateIntegrationBody,
  ImportDependencyStatus,
  IntegrationAppSummary,
  IntegrationConfigBody,
  IntegrationDetail,
  IntegrationListItem,
  UpdateIntegrationBody,
} from './integration.dto';
import { IntegrationEntity, type IntegrationRunStatus } from './integration.entity';
import { shownError } from '../work-queue/tenant-error';

export type IntegrationSort = 'created_at' | 'updated_at' | 'last_sync_at';

export interface IntegrationListQuery {
  state?: ResourceState;
  status?: IntegrationRunStatus;
  sourceAppId?: string;
  destinationAppId?: string;
  dataType?: string;
  sort?: IntegrationSort;
  order?: SortOrder;
}

const sortProperty: Record<IntegrationSort, keyof IntegrationEntity> = {
  created_at: 'createdAt',
  updated_at: 'updatedAt',
  last_sync_at: 'lastSyncAt',
};

interface Dependency {
  status: ImportDependencyStatus;
  sourceIds: string[];
  jobIds: string[];
}

export class IntegrationService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly apps: AppService,
    private readonly jobs: JobService,
    private readonly urls: TenantUrlPolicy = new TenantUrlPolicy(),
    private readonly changes?: TenantChangePublisher,
    private readonly limiter: AccountLimiter = new AccountLimiter(),
  ) {}

  /** Tells every cache of the account's tenant records (docs/tracking-api.md, "Revoked write keys"). */
  private async changed<T>(accountId: string, result: T): Promise<T> {
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return result;
  }

  private get repository() {
    return this.dataSource.getRepository(IntegrationEntity);
  }

  async list(
    accountId: string,
    query: IntegrationListQuery,
    page: PageRequest,
  ): Promise<ListResponse<IntegrationListItem>> {
    const qb = this.repository
      .createQueryBuilder('integration')
      .where('integration.accountId = :accountId', { accountId });
    whereState(qb, query.state);
    if (query.status) qb.andWhere('integration.status = :status', { status: query.status });
    if (query.sourceAppId)
      qb.andWhere('integration.sourceAppId = :sourceAppId', { sourceAppId: query.sourceAppId });
    if (query.destinationAppId) {
      qb.andWhere('integration.destinationAppId = :destinationAppId', {
        destinationAppId: query.destinationAppId,
      });
    }
    if (query.dataType) qb.andWhere('integration.dataType = :dataType', { dataType: query.dataType });
    const result = await pageOf(qb, sortProperty[query.sort ?? 'created_at'], query.order, page, (i) => i);
    const context = await this.context(accountId, result.data);
    return {
      ...result,
      data: result.data.map((i) => toListItem(i, context.apps, context.dependencyOf(i))),
    };
  }

  async get(accountId: string, integrationId: string): Promise<IntegrationDetail> {
    return this.toDetail(await this.find(accountId, integrationId));
  }

  find(accountId: string, integrationId: string): Promise<IntegrationEntity> {
    return findInAccount(this.repository, 'integration', accountId, integrationId);
  }

  async create(accountId: string, body: CreateIntegrationBody): Promise<IntegrationDetail> {
    const destination = await this.apps.requireUsable(
      accountId,
      body.destinationAppId,
      'destination',
      'destinationAppId',
    );
    const source =
      body.sourceAppId === undefined
        ? null
        : await this.apps.requireUsable(accountId, body.sourceAppId, 'source', 'sourceAppId');
    checkConfig(body.config);
    scheduledTasks(body.config.tasks, source?.appType ?? null);
    await this.checkUrls(destination, body.config);
    if (body.historicalSyncStartDate && body.historicalSyncStartDate.getTime() > Date.now()) {
      throw invalidField('body.historicalSyncStartDate', 'must not be in the future');
    }
    const integration = await this.dataSource.transaction(async (tx) => {
      await this.limiter.reserve(tx, accountId, 'integrations');
      const repository = tx.getRepository(IntegrationEntity);
      return repository.save(
        repository.create({
          accountId,
          sourceAppId: source?.id ?? null,
          destinationAppId: destination.id,
          dataType: body.dataType,
          config: body.config,
          schedule: body.schedule,
          state: 'active',
          status: destination.state === 'active' ? 'pending' : 'draft',
          lastSyncAt: null,
          lastError: null,
          consecutiveFailures: 0,
          latestJobId: null,
          historicalSyncStartDate: body.historicalSyncStartDate ?? null,
          deletedAt: null,
          nextRunAt: null,
        }),
      );
    });
    // The first run is due at once (bounded by historicalSyncStartDate), then on the schedule.
    if (nextRunOf(integration, integration.createdAt)) {
      integration.nextRunAt = integration.createdAt;
      await this.repository.update(integration.id, { nextRunAt: integration.nextRunAt });
    }
    return this.changed(accountId, await this.toDetail(integration));
  }

  async update(
    accountId: string,
    integrationId: string,
    body: UpdateIntegrationBody,
  ): Promise<IntegrationDetail> {
    const integration = await this.find(accountId, integrationId);
    if (integration.state === 'deleted')
      throw conflict('resource_deleted', `Integration ${integration.id} is deleted`);
    if (body.config !== undefined) {
      checkConfig(body.config);
      const sourceApp = integration.sourceAppId
        ? await this.dataSource.getRepository(AppEntity).findOneBy({ id: integration.sourceAppId })
        : null;
      scheduledTasks(body.config.tasks, sourceApp?.appType ?? null);
      const destination = await this.dataSource
        .getRepository(AppEntity)
        .findOneByOrFail({ id: integration.destinationAppId });
      await this.checkUrls(destination, body.config);
      integration.config = keepMaskedSecrets(body.config, integration.config) as IntegrationEntity['config'];
    }
    if (body.schedule !== undefined) integration.schedule = body.schedule;
    const updated = await this.dataSource.transaction(async (tx) => {
      if (body.isActive === false && integration.state === 'active') {
        integration.state = 'inactive';
        integration.status = 'paused';
        await this.jobs.cancelActive({ integrationId: integration.id }, 'The integration was paused', tx);
      } else if (body.isActive === true && integration.state === 'inactive') {
        // Resuming never restores a stale `running`: the next run decides from here.
        const destination = await tx
          .getRepository(AppEntity)
          .findOneByOrFail({ id: integration.destinationAppId });
        integration.state = 'active';
        integration.status = destination.state === 'active' ? 'pending' : 'draft';
      }
      // A new schedule or a resume starts from the next slot; otherwise a pending slot stays.
      const reschedule =
        body.isActive === true || body.schedule !== undefined || integration.nextRunAt === null;
      if (integration.state !== 'active') integration.nextRunAt = null;
      else if (reschedule) integration.nextRunAt = nextRunOf(integration, new Date());
      await tx.getRepository(IntegrationEntity).save(integration);
      return this.toDetail(integration);
    });
    return this.changed(accountId, updated);
  }

  /** Soft delete: a queued or running run is cancelled and nothing more is scheduled. Idempotent. */
  async delete(accountId: string, integrationId: string): Promise<IntegrationDetail> {
    const integration = await this.find(accountId, integrationId);
    const deleted = await this.dataSource.transaction(async (tx) => {
      if (integration.state !== 'deleted') {
        await this.jobs.cancelActive({ integrationId: integration.id }, 'The integration was deleted', tx);
        integration.nextRunAt = null;
      }
      return this.toDetail(await softDelete(tx.getRepository(IntegrationEntity), integration));
    });
    return this.changed(accountId, deleted);
  }

  /**
   * Every URL of the config passes the egress policy, and an override (a webhook's
   * config.global.url) stays on the origin of the app's own URL: the app's secret was entered
   * for that host, and an integration cannot enter it again.
   */
  private async checkUrls(destination: AppEntity, config: IntegrationConfigBody): Promise<void> {
    await this.urls.assertAllowed(config, 'body.config');
    const own = recipientOrigin(destination.appType, destination.config);
    if (recipientOrigin(destination.appType, destination.config, config.global) !== own)
      throw secretRequiredForNewHost(
        'body.config.global.url',
        `A URL on another host than the app's (${own ?? 'none set'})`,
      );
  }

  /** `POST /integrations/{id}/run`: queues a run now, unless one is queued or running. */
  async triggerRun(accountId: string, integrationId: string): Promise<JobView> {
    const integration = await this.find(accountId, integrationId);
    if (integration.state !== 'active')
      throw conflict(
        'integration_not_active',
        `Integration ${integration.id} is ${integration.state}; only active integrations run`,
      );
    if (integration.status === 'draft')
      throw conflict(
        'integration_draft',
        `Integration ${integration.id} is a draft: its destination app has no credentials`,
      );
    if (!hasScheduledWork(integration))
      throw conflict(
        'nothing_to_run',
        'The integration only has real-time tasks (events), which the delivery consumers send',
      );
    const job = toJobView(await dispatchIntegrationRun(this.jobs, integration, 'manual'));
    this.jobs.notifyQueued();
    return job;
  }

  /** The integration's runs, newest first by default. */
  async listJobs(
    accountId: string,
    integrationId: string,
    filter: { status?: JobStatus; order?: SortOrder },
    page: PageRequest,
  ): Promise<ListResponse<JobView>> {
    const integration = await this.find(accountId, integrationId);
    return this.jobs.listForIntegration(accountId, integration.id, filter, page);
  }

  private async toDetail(integration: IntegrationEntity): Promise<IntegrationDetail> {
    const context = await this.context(integration.accountId, [integration]);
    const dependency = context.dependencyOf(integration);
    const sourceApp = integration.sourceAppId ? context.apps.get(integration.sourceAppId) : undefined;
    const destinationApp = context.apps.get(integration.destinationAppId);
    if (!destinationApp) throw new Error(`Integration ${integration.id} references a missing app`);
    return {
      ...toListItem(integration, context.apps, dependency),
      sourceApp: sourceApp ? summary(sourceApp) : null,
      destinationApp: summary(destinationApp),
      importDependency: { status: dependency.status, sourceIds: dependency.sourceIds },
      historicalSyncStartDate: isoOrNull(integration.historicalSyncStartDate),
      triggeredImportJobIds: dependency.jobIds,
      nextRunAt: isoOrNull(integration.nextRunAt),
    };
  }

  /** The apps and source-app dependencies of a page of integrations, in two queries. */
  private async context(accountId: string, integrations: IntegrationEntity[]) {
    const appIds = [
      ...new Set(integrations.flatMap((i) => [i.destinationAppId, i.sourceAppId ?? []].flat())),
    ];
    const apps = new Map<string, AppEntity>();
    if (appIds.length > 0) {
      for (const app of await this.dataSource.getRepository(AppEntity).findBy({ id: In(appIds) }))
        apps.set(app.id, app);
    }
    const sourceAppIds = [
      ...new Set(integrations.map((i) => i.sourceAppId).filter((id): id is string => id !== null)),
    ];
    const sources =
      sourceAppIds.length === 0
        ? []
        : await this.dataSource
            .getRepository(SourceEntity)
            .findBy({ accountId, appId: In(sourceAppIds), state: 'active' });
    const dependencyOf = (integration: IntegrationEntity): Dependency => {
      if (!integration.sourceAppId) return { status: 'not_required', sourceIds: [], jobIds: [] };
      const own = sources.filter((s) => s.appId === integration.sourceAppId);
      const status: ImportDependencyStatus =
        own.length === 0 ? 'missing_source' : own.some((s) => s.lastSyncAt !== null) ? 'ready' : 'waiting';
      return {
        status,
        sourceIds: own.map((s) => s.id),
        jobIds: own.map((s) => s.latestJobId).filter((id): id is string => id !== null),
      };
    };
    return { apps, dependencyOf };
  }
}

function checkConfig(config: IntegrationConfigBody): void {
  config.tasks.forEach((task, index) => {
    if (typeof task.task_type !== 'string' || task.task_type.length === 0) {
      throw invalidField(`body.config.tasks[${index}].task_type`, 'is required');
    }
  });
}

function summary(app: AppEntity): IntegrationAppSummary {
  return { id: app.id, appType: app.appType, displayName: app.displayName, role: app.role, state: app.state };
}

function toListItem(
  integration: IntegrationEntity,
  apps: Map<string, AppEntity>,
  dependency: Dependency,
): IntegrationListItem {
  const source = integration.sourceAppId ? apps.get(integration.sourceAppId) : undefined;
  const destination = apps.get(integration.destinationAppId);
  return {
    id: integration.id,
    accountId: integration.accountId,
    sourceAppId: integration.sourceAppId,
    sourceAppName: source?.displayName ?? null,
    sourceAppType: source?.appType ?? null,
    destinationAppId: integration.destinationAppId,
    destinationAppName: destination?.displayName ?? '',
    destinationAppType: destination?.appType ?? '',
    dataType: integration.dataType,
    config: maskSecretFields(integration.config) as IntegrationConfigBody,
    schedule: integration.schedule,
    state: integration.state,
    status: integration.status,
    isActive: integration.state === 'active',
    lastSyncAt: isoOrNull(integration.lastSyncAt),
    lastError: shownError(integration.lastError),
    consecutiveFailures: integration.consecutiveFailures,
    importDependencyStatus: dependency.status,
    latestJobId: integration.latestJobId,
    createdAt: iso(integration.createdAt),
    updatedAt: iso(integration.updatedAt),
  };
}
