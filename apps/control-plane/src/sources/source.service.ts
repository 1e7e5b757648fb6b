import { TenantUrlPolicy } from '../apps/tenant-urls';
import { AccountLimiter } from '../accounts/account-limits';
import type { DataSource } from 'typeorm';
import { In } from 'typeorm';
import { importTasksOf } from '@pipeline/catalog';
import { AppEntity } from '../apps/app.entity';
import type { AppService } from '../apps/app.service';
import { keepMaskedSecrets, maskSecretFields } from '../apps/secret-masking';
import { conflict, invalidField, unprocessable } from '../http/api-errors';
import { findInAccount, softDelete } from '../database/account-resource';
import { iso, isoOrNull, pageOf, whereState } from '../http/list-query';
import type { ListResponse, PageRequest, SortOrder } from '../http/pagination';
import type { ResourceState } from '../http/resource-state';
import type { JobView } from '../jobs/job.dto';
import { toJobView } from '../jobs/job-view';
import type { JobStatus } from '../jobs/job.entity';
import type { JobService } from '../jobs/job.service';
import { dispatchSourceSync } from './source-sync-dispatch';
import type {
  CreateSourceBody,
  SourceCreated,
  SourceDetail,
  SourceListItem,
  UpdateSourceBody,
} from './source.dto';
import { SourceEntity, type IntegrationStatus } from './source.entity';
import { nextSyncOf } from './source-schedule';
import { checkFrequency, describeFrequency, hoursToDays, isIanaTimeZone } from './sync-schedule-format';
import { warehouseSchemaFor, warehouseTablesFor } from './warehouse-location';
import { accountWarehouseOf } from '../warehouse-registry/warehouse-placements';
import { shownError } from '../work-queue/tenant-error';

export type SourceSort = 'created_at' | 'updated_at' | 'last_sync_at';

export interface SourceListQuery {
  state?: ResourceState;
  syncType?: string;
  appId?: string;
  integrationStatus?: IntegrationStatus;
  sort?: SourceSort;
  order?: SortOrder;
}

const sortProperty: Record<SourceSort, keyof SourceEntity> = {
  created_at: 'createdAt',
  updated_at: 'updatedAt',
  last_sync_at: 'lastSyncAt',
};

export class SourceService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly apps: AppService,
    private readonly jobs: JobService,
    private readonly urls: TenantUrlPolicy = new TenantUrlPolicy(),
    private readonly limiter: AccountLimiter = new AccountLimiter(),
  ) {
    // An app that an active source imports through cannot be deleted.
    apps.registerUsers(async (accountId, appId) => {
      const active = await this.repository.find({
        select: { id: true },
        where: { appId, accountId, state: 'active' },
      });
      return active.length > 0 ? `active source ${active.map((s) => s.id).join(', ')}` : undefined;
    });
  }

  private get repository() {
    return this.dataSource.getRepository(SourceEntity);
  }

  async list(
    accountId: string,
    query: SourceListQuery,
    page: PageRequest,
  ): Promise<ListResponse<SourceListItem>> {
    const qb = this.repository
      .createQueryBuilder('source')
      .where('source.accountId = :accountId', { accountId });
    whereState(qb, query.state);
    if (query.syncType) qb.andWhere('source.syncType = :syncType', { syncType: query.syncType });
    if (query.appId) qb.andWhere('source.appId = :appId', { appId: query.appId.toLowerCase() });
    if (query.integrationStatus) {
      qb.andWhere('source.integrationStatus = :status', { status: query.integrationStatus });
    }
    const result = await pageOf(qb, sortProperty[query.sort ?? 'created_at'], query.order, page, (s) => s);
    const apps = await this.appsById(result.data.map((s) => s.appId));
    return { ...result, data: result.data.map((s) => toListItem(s, apps.get(s.appId))) };
  }

  async get(accountId: string, sourceId: string): Promise<SourceDetail> {
    return this.toDetail(await this.find(accountId, sourceId));
  }

  /** The source's jobs (404 for a source that is not the account's). */
  async listJobs(
    accountId: string,
    sourceId: string,
    filter: { status?: JobStatus; order?: SortOrder },
    page: PageRequest,
  ): Promise<ListResponse<JobView>> {
    const source = await this.find(accountId, sourceId);
    return this.jobs.listForSource(accountId, source.id, filter, page);
  }

  find(accountId: string, sourceId: string): Promise<SourceEntity> {
    return findInAccount(this.repository, 'source', accountId, sourceId);
  }

  async create(accountId: string, body: CreateSourceBody): Promise<SourceCreated> {
    const app = await this.apps.requireUsable(accountId, body.appId, 'source', 'appId');
    if (body.syncType !== app.appType) {
      throw unprocessable(
        'sync_type_mismatch',
        `syncType must be ${app.appType}, the type of app ${app.id}`,
        [{ path: 'body.syncType', message: `must equal the app type ${app.appType}` }],
      );
    }
    const offered = importTasksOf(app.appType);
    const importTasks = this.checkImportTasks(app.appType, body.importTasks ?? [...offered]);
    const unit = body.syncFrequencyUnit ?? 'days';
    const value = body.syncFrequencyValue ?? 1;
    checkFrequency(value, unit);
    const timezone = body.syncAnchorTimezone ?? 'UTC';
    if (!isIanaTimeZone(timezone))
      throw invalidField('body.syncAnchorTimezone', 'must be an IANA time zone, e.g. Europe/Berlin');
    if (body.historicalSyncStartDate && body.historicalSyncStartDate.getTime() > Date.now()) {
      throw invalidField('body.historicalSyncStartDate', 'must not be in the future');
    }
    const oneOff = body.oneOff ?? false;
    await this.urls.assertAllowed(body.config ?? {}, 'body.config');

    const created = await this.dataSource.transaction(async (tx) => {
      await this.limiter.reserve(tx, accountId, 'sources');
      const source = await tx.getRepository(SourceEntity).save(
        tx.getRepository(SourceEntity).create({
          accountId,
          appId: app.id,
          syncType: body.syncType,
          importTasks,
          syncFrequencyValue: value,
          syncFrequencyUnit: unit,
          syncAnchorTime: body.syncAnchorTime ?? '00:00',
          syncAnchorTimezone: timezone,
          rollingPeriodDays: body.rollingPeriodHours === undefined ? 7 : hoursToDays(body.rollingPeriodHours),
          historicalSyncStartDate: body.historicalSyncStartDate ?? null,
          oneOff,
          config: body.config ?? {},
          state: 'active',
          integrationStatus: 'pending',
          lastSyncAt: null,
          lastError: null,
          consecutiveFailures: 0,
          latestJobId: null,
          activeImportJobId: null,
          deletedAt: null,
        }),
      );
      source.nextSyncAt = nextSyncOf(source, source.createdAt);
      await tx.getRepository(SourceEntity).update(source.id, { nextSyncAt: source.nextSyncAt });
      const dispatch = oneOff || body.runNow === true;
      const job = dispatch
        ? await dispatchSourceSync(this.jobs, source, oneOff ? 'one_off' : 'onboarding', tx)
        : null;
      return { ...(await this.toDetail(source, app)), dispatchedJob: job ? toJobView(job) : null };
    });
    if (created.dispatchedJob) this.jobs.notifyQueued();
    return created;
  }

  async update(accountId: string, sourceId: string, body: UpdateSourceBody): Promise<SourceDetail> {
    const source = await this.find(accountId, sourceId);
    if (source.state === 'deleted') throw conflict('resource_deleted', `Source ${source.id} is deleted`);
    if (body.importTasks !== undefined)
      source.importTasks = this.checkImportTasks(source.syncType, body.importTasks);
    if (body.config !== undefined) {
      await this.urls.assertAllowed(body.config, 'body.config');
      source.config = keepMaskedSecrets(body.config, source.config) as Record<string, unknown>;
    }
    return this.dataSource.transaction(async (tx) => {
      if (body.isActive === false && source.state === 'active') {
        source.state = 'inactive';
        source.integrationStatus = 'paused';
        source.nextSyncAt = null;
        await this.jobs.cancelActive({ sourceId: source.id }, 'The source was paused', tx);
        source.activeImportJobId = null;
      } else if (body.isActive === true && source.state === 'inactive') {
        source.state = 'active';
        source.integrationStatus = 'pending';
        source.nextSyncAt = nextSyncOf(source, new Date());
      }
      await tx.getRepository(SourceEntity).save(source);
      return this.toDetail(source);
    });
  }

  /** Soft delete: the source's queued or running sync is cancelled and it is no longer scheduled. Idempotent. */
  async delete(accountId: string, sourceId: string): Promise<SourceDetail> {
    const source = await this.find(accountId, sourceId);
    return this.dataSource.transaction(async (tx) => {
      if (source.state !== 'deleted') {
        await this.jobs.cancelActive({ sourceId: source.id }, 'The source was deleted', tx);
        await tx.getRepository(SourceEntity).update(source.id, { nextSyncAt: null, activeImportJobId: null });
        source.activeImportJobId = null;
        source.nextSyncAt = null;
      }
      return this.toDetail(await softDelete(tx.getRepository(SourceEntity), source));
    });
  }

  /** `POST /sources/{id}/sync`: queues a job, unless one is queued or running already. */
  async triggerSync(accountId: string, sourceId: string): Promise<JobView> {
    const source = await this.find(accountId, sourceId);
    if (source.state !== 'active') {
      throw conflict('source_not_active', `Source ${source.id} is ${source.state}; only active sources sync`);
    }
    const job = toJobView(await dispatchSourceSync(this.jobs, source, 'manual'));
    this.jobs.notifyQueued();
    return job;
  }

  private checkImportTasks(syncType: string, tasks: string[]): string[] {
    const offered = importTasksOf(syncType);
    const unknown = tasks.filter((t) => !offered.includes(t));
    if (unknown.length > 0) {
      throw unprocessable(
        'unknown_import_task',
        `${syncType} offers the import tasks: ${offered.join(', ') || 'none'}`,
        [{ path: 'body.importTasks', message: `unknown: ${unknown.join(', ')}` }],
      );
    }
    return [...new Set(tasks)];
  }

  private async appsById(ids: string[]): Promise<Map<string, AppEntity>> {
    if (ids.length === 0) return new Map();
    const apps = await this.dataSource.getRepository(AppEntity).findBy({ id: In([...new Set(ids)]) });
    return new Map(apps.map((a) => [a.id, a]));
  }

  private async toDetail(source: SourceEntity, knownApp?: AppEntity): Promise<SourceDetail> {
    const app =
      knownApp ?? (await this.dataSource.getRepository(AppEntity).findOneByOrFail({ id: source.appId }));
    const placed = await accountWarehouseOf(this.dataSource, source.accountId);
    return {
      ...toListItem(source, app),
      isActive: source.state === 'active',
      syncFrequencyValue: source.syncFrequencyValue,
      syncFrequencyUnit: source.syncFrequencyUnit,
      historicalSyncStartDate: isoOrNull(source.historicalSyncStartDate),
      oneOff: source.oneOff,
      config: maskSecretFields(source.config) as Record<string, unknown>,
      app: {
        id: app.id,
        appType: app.appType,
        displayName: app.displayName,
        role: app.role,
        state: app.state,
      },
      warehouse: {
        warehouseId: placed?.warehouseId ?? null,
        status: placed?.status ?? null,
        schema: placed?.schema ?? warehouseSchemaFor(source.accountId),
        tables: warehouseTablesFor(source.syncType, source.importTasks),
      },
      onboardingState: source.lastSyncAt
        ? 'completed'
        : source.activeImportJobId
          ? 'first_sync_running'
          : source.consecutiveFailures > 0
            ? 'first_sync_failed'
            : 'awaiting_first_sync',
      latestJobId: source.latestJobId,
      activeImportJobId: source.activeImportJobId,
      nextSyncAt: isoOrNull(source.nextSyncAt),
    };
  }
}

function toListItem(source: SourceEntity, app: AppEntity | undefined): SourceListItem {
  return {
    id: source.id,
    accountId: source.accountId,
    appId: source.appId,
    appName: app?.displayName ?? '',
    syncType: source.syncType,
    importTasks: source.importTasks,
    syncFrequency: describeFrequency(source.syncFrequencyValue, source.syncFrequencyUnit),
    syncAnchorTime: source.syncAnchorTime,
    syncAnchorTimezone: source.syncAnchorTimezone,
    rollingPeriodDays: source.rollingPeriodDays,
    state: source.state,
    integrationStatus: source.integrationStatus,
    lastSyncAt: isoOrNull(source.lastSyncAt),
    lastError: shownError(source.lastError),
    consecutiveFailures: source.consecutiveFailures,
    createdAt: iso(source.createdAt),
    updatedAt: iso(source.updatedAt),
  };
}
