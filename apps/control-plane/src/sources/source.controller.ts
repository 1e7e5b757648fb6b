import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Delete,
  Get,
  Patch,
  Path,
  Post,
  Query,
  Request,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import { invalidField } from '../http/api-errors';
import { isUuid } from '../http/ids';
import { pageRequest, type ListResponse, type SortOrder } from '../http/pagination';
import type { Problem } from '../http/problem';
import type { ResourceState } from '../http/resource-state';
import type { JobView } from '../jobs/job.dto';
import type { JobStatus } from '../jobs/job.entity';
import type {
  CreateSourceBody,
  SourceCreated,
  SourceDetail,
  SourceListItem,
  UpdateSourceBody,
} from './source.dto';
import type { IntegrationStatus } from './source.entity';
import type { SourceService, SourceSort } from './source.service';

/** Imports from connected source-role apps into the warehouse. */
@Route('api/v1/sources')
@Tags('Sources')
@Response<Problem>(400, 'Invalid request: unknown body fields, wrong types, invalid query values')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class SourcesController extends Controller {
  constructor(private readonly sources: SourceService) {
    super();
  }

  /**
   * Lists the account's sources. Deleted sources are listed only with `state=deleted`.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @param sort Sort key (default `created_at`; `last_sync_at` puts never-synced sources last).
   * @param order Sort direction (default `desc`).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['sources.read'])
  async listSources(
    @Request() request: ExpressRequest,
    @Query() limit?: number,
    @Query() offset?: number,
    @Query() sort?: SourceSort,
    @Query() order?: SortOrder,
    @Query() state?: ResourceState,
    @Query() sync_type?: string,
    @Query() app_id?: string,
    @Query() integration_status?: IntegrationStatus,
  ): Promise<ListResponse<SourceListItem>> {
    if (app_id !== undefined && !isUuid(app_id)) throw invalidField('query.app_id', 'must be a UUID');
    return this.sources.list(
      principalOf(request).accountId,
      { sort, order, state, syncType: sync_type, appId: app_id, integrationStatus: integration_status },
      pageRequest(limit, offset),
    );
  }

  /** A source with its app, schedule, warehouse location, onboarding state and job references. */
  @Get('{sourceId}')
  @Security('api_key', ['sources.read'])
  @Response<Problem>(404, 'No such source in this account')
  async getSource(
    @Request() request: ExpressRequest,
    @Path() sourceId: string,
  ): Promise<{ data: SourceDetail }> {
    return { data: await this.sources.get(principalOf(request).accountId, sourceId) };
  }

  /** Creates a source; with `oneOff` or `runNow` its first sync is dispatched at once (`dispatchedJob`). */
  @Post()
  @Security('api_key', ['sources.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    409,
    'account_limit_reached: the account holds its ACCOUNT_MAX_SOURCES sources (or, with runNow or oneOff, its ACCOUNT_MAX_QUEUED_RUNS queued runs); `limit` names which',
  )
  @Response<Problem>(
    422,
    'invalid_reference, app_role_mismatch, sync_type_mismatch, unknown_import_task, url_not_allowed',
  )
  async createSource(
    @Request() request: ExpressRequest,
    @Body() body: CreateSourceBody,
  ): Promise<{ data: SourceCreated }> {
    const data = await this.sources.create(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /** Updates importTasks, config or isActive (pause / resume); other fields are rejected with 400. */
  @Patch('{sourceId}')
  @Security('api_key', ['sources.write'])
  @Response<Problem>(404, 'No such source in this account')
  @Response<Problem>(409, 'resource_deleted')
  @Response<Problem>(422, 'unknown_import_task, url_not_allowed')
  async updateSource(
    @Request() request: ExpressRequest,
    @Path() sourceId: string,
    @Body() body: UpdateSourceBody,
  ): Promise<{ data: SourceDetail }> {
    return { data: await this.sources.update(principalOf(request).accountId, sourceId, body) };
  }

  /** Soft-deletes the source (`state: deleted`). */
  @Delete('{sourceId}')
  @Security('api_key', ['sources.write'])
  @Response<Problem>(404, 'No such source in this account')
  async deleteSource(
    @Request() request: ExpressRequest,
    @Path() sourceId: string,
  ): Promise<{ data: SourceDetail }> {
    return { data: await this.sources.delete(principalOf(request).accountId, sourceId) };
  }

  /**
   * The source's sync jobs, newest first: follow a triggered sync (status, rows read and
   * written, error, times) until it is `succeeded`, `failed` or `cancelled`.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @param order By creation time (default `desc`).
   * @isInt limit
   * @isInt offset
   */
  @Get('{sourceId}/jobs')
  @Security('api_key', ['sources.read'])
  @Response<Problem>(404, 'No such source in this account')
  async listSourceJobs(
    @Request() request: ExpressRequest,
    @Path() sourceId: string,
    @Query() limit?: number,
    @Query() offset?: number,
    @Query() order?: SortOrder,
    @Query() status?: JobStatus,
  ): Promise<ListResponse<JobView>> {
    return this.sources.listJobs(
      principalOf(request).accountId,
      sourceId,
      { status, order },
      pageRequest(limit, offset),
    );
  }

  /** Dispatches a sync now: 202 with the queued job. No body. */
  @Post('{sourceId}/sync')
  @Security('api_key', ['sources.write'])
  @SuccessResponse(202, 'Accepted: the job is queued')
  @Response<Problem>(404, 'No such source in this account')
  @Response<Problem>(
    409,
    'sync_already_active (a job is queued or running), source_not_active, account_limit_reached (the account has ACCOUNT_MAX_QUEUED_RUNS queued runs)',
  )
  async triggerSync(
    @Request() request: ExpressRequest,
    @Path() sourceId: string,
  ): Promise<{ data: JobView }> {
    const data = await this.sources.triggerSync(principalOf(request).accountId, sourceId);
    this.setStatus(202);
    return { data };
  }
}
