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
import type {
  CreateIntegrationBody,
  IntegrationDetail,
  IntegrationListItem,
  UpdateIntegrationBody,
} from './integration.dto';
import type { JobView } from '../jobs/job.dto';
import type { JobStatus } from '../jobs/job.entity';
import type { IntegrationRunStatus } from './integration.entity';
import type { IntegrationService, IntegrationSort } from './integration.service';

/** Deliveries from the warehouse (and a source app's imports) to destination apps. */
@Route('api/v1/integrations')
@Tags('Integrations')
@Response<Problem>(400, 'Invalid request: unknown body fields, wrong types, invalid query values')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class IntegrationsController extends Controller {
  constructor(private readonly integrations: IntegrationService) {
    super();
  }

  /**
   * Lists the account's integrations. Deleted ones are listed only with `state=deleted`.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @param sort Sort key (default `created_at`).
   * @param order Sort direction (default `desc`).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['integrations.read'])
  async listIntegrations(
    @Request() request: ExpressRequest,
    @Query() limit?: number,
    @Query() offset?: number,
    @Query() sort?: IntegrationSort,
    @Query() order?: SortOrder,
    @Query() state?: ResourceState,
    @Query() status?: IntegrationRunStatus,
    @Query() source_app_id?: string,
    @Query() destination_app_id?: string,
    @Query() data_type?: string,
  ): Promise<ListResponse<IntegrationListItem>> {
    for (const [name, value] of [
      ['source_app_id', source_app_id],
      ['destination_app_id', destination_app_id],
    ] as const) {
      if (value !== undefined && !isUuid(value)) throw invalidField(`query.${name}`, 'must be a UUID');
    }
    return this.integrations.list(
      principalOf(request).accountId,
      {
        sort,
        order,
        state,
        status,
        sourceAppId: source_app_id?.toLowerCase(),
        destinationAppId: destination_app_id?.toLowerCase(),
        dataType: data_type,
      },
      pageRequest(limit, offset),
    );
  }

  /** An integration with its apps, import dependency, and the import jobs it waits on. */
  @Get('{integrationId}')
  @Security('api_key', ['integrations.read'])
  @Response<Problem>(404, 'No such integration in this account')
  async getIntegration(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
  ): Promise<{ data: IntegrationDetail }> {
    return { data: await this.integrations.get(principalOf(request).accountId, integrationId) };
  }

  /** Creates an integration: status `pending`, or `draft` while the destination app has no credentials. */
  @Post()
  @Security('api_key', ['integrations.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    409,
    'account_limit_reached: the account holds its ACCOUNT_MAX_INTEGRATIONS integrations',
  )
  @Response<Problem>(
    422,
    'invalid_reference, app_role_mismatch, url_not_allowed: a URL of config is not an http(s) URL on a public host, secret_required_for_new_host: config.global.url is not on the origin of the app’s own URL',
  )
  async createIntegration(
    @Request() request: ExpressRequest,
    @Body() body: CreateIntegrationBody,
  ): Promise<{ data: IntegrationDetail }> {
    const data = await this.integrations.create(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /** Updates config, schedule or isActive (pause / resume); other fields are rejected with 400. */
  @Patch('{integrationId}')
  @Security('api_key', ['integrations.write'])
  @Response<Problem>(404, 'No such integration in this account')
  @Response<Problem>(409, 'resource_deleted')
  @Response<Problem>(422, 'url_not_allowed, secret_required_for_new_host')
  async updateIntegration(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
    @Body() body: UpdateIntegrationBody,
  ): Promise<{ data: IntegrationDetail }> {
    return { data: await this.integrations.update(principalOf(request).accountId, integrationId, body) };
  }

  /** Soft-deletes the integration (`state: deleted`). */
  @Delete('{integrationId}')
  @Security('api_key', ['integrations.write'])
  @Response<Problem>(404, 'No such integration in this account')
  async deleteIntegration(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
  ): Promise<{ data: IntegrationDetail }> {
    return { data: await this.integrations.delete(principalOf(request).accountId, integrationId) };
  }

  /**
   * The integration's runs, newest first: follow a triggered run (status, rows read and sent,
   * error, times) until it is `succeeded`, `failed` or `cancelled`.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @param order By creation time (default `desc`).
   * @isInt limit
   * @isInt offset
   */
  @Get('{integrationId}/jobs')
  @Security('api_key', ['integrations.read'])
  @Response<Problem>(404, 'No such integration in this account')
  async listIntegrationJobs(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
    @Query() limit?: number,
    @Query() offset?: number,
    @Query() order?: SortOrder,
    @Query() status?: JobStatus,
  ): Promise<ListResponse<JobView>> {
    return this.integrations.listJobs(
      principalOf(request).accountId,
      integrationId,
      { status, order },
      pageRequest(limit, offset),
    );
  }

  /**
   * Queues a run now: 202 with the queued job. No body. A run that cannot reach the warehouse
   * is retried with backoff; when its attempts run out it fails with `error.code`
   * `warehouse_unavailable`.
   */
  @Post('{integrationId}/run')
  @Security('api_key', ['integrations.write'])
  @SuccessResponse(202, 'Accepted: the run is queued')
  @Response<Problem>(404, 'No such integration in this account')
  @Response<Problem>(
    409,
    'run_already_active (a run is queued or running), integration_not_active, integration_draft, nothing_to_run, account_limit_reached (the account has ACCOUNT_MAX_QUEUED_RUNS queued runs)',
  )
  async triggerIntegrationRun(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
  ): Promise<{ data: JobView }> {
    const data = await this.integrations.triggerRun(principalOf(request).accountId, integrationId);
    this.setStatus(202);
    return { data };
  }
}
