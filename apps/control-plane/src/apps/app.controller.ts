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
import { pageRequest, type ListResponse, type SortOrder } from '../http/pagination';
import type { Problem } from '../http/problem';
import type { ResourceState } from '../http/resource-state';
import type { AppDetail, AppListItem, CreateAppBody, UpdateAppBody } from './app.dto';
import type { AppRole } from './app.entity';
import type { AppService, AppSort } from './app.service';
import type { AppConnectionTest } from './warehouse-app-check';

/** Authenticated connections to external platforms. */
@Route('api/v1/apps')
@Tags('Apps')
@Response<Problem>(400, 'Invalid request: unknown body fields, wrong types, invalid query values')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class AppsController extends Controller {
  constructor(private readonly apps: AppService) {
    super();
  }

  /**
   * Lists the account's apps. Deleted apps are listed only with `state=deleted`.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @param sort Sort key (default `created_at`).
   * @param order Sort direction (default `desc`).
   * @param app_type Only apps of this type.
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['apps.read'])
  async listApps(
    @Request() request: ExpressRequest,
    @Query() limit?: number,
    @Query() offset?: number,
    @Query() sort?: AppSort,
    @Query() order?: SortOrder,
    @Query() state?: ResourceState,
    @Query() role?: AppRole,
    @Query() app_type?: string,
  ): Promise<ListResponse<AppListItem>> {
    return this.apps.list(
      principalOf(request).accountId,
      { sort, order, state, role, appType: app_type },
      pageRequest(limit, offset),
    );
  }

  /** An app with its permissions, masked configuration and masked credential fields. */
  @Get('{appId}')
  @Security('api_key', ['apps.read'])
  @Response<Problem>(404, 'No such app in this account')
  async getApp(@Request() request: ExpressRequest, @Path() appId: string): Promise<{ data: AppDetail }> {
    return { data: await this.apps.get(principalOf(request).accountId, appId) };
  }

  /** Creates an app: `active` when credentials are given, `inactive` otherwise. */
  @Post()
  @Security('api_key', ['apps.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(409, 'app_name_taken: another app has this displayName')
  @Response<Problem>(
    422,
    'unknown_app_type, role_not_supported, invalid_app_settings, url_not_allowed: a URL of config is not an http(s) URL on a public host; a customer-owned warehouse that fails its connection test: warehouse_connection_invalid, egress_address_refused: the host is or resolves to a non-public address, warehouse_connection_refused, warehouse_tls_failed, warehouse_login_failed, warehouse_database_missing, warehouse_permission_denied: the role may not create in the schema, warehouse_check_failed',
  )
  async createApp(
    @Request() request: ExpressRequest,
    @Body() body: CreateAppBody,
  ): Promise<{ data: AppDetail }> {
    const data = await this.apps.create(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Updates displayName, credentials, config or role; other fields are rejected. A config that
   * moves where the stored credentials are sent (a Segment endpoint, a webhook URL, a Braze
   * instance, a shop: another scheme, host or port) must come with the credentials entered
   * again, or with `credentials: null`.
   */
  @Patch('{appId}')
  @Security('api_key', ['apps.write'])
  @Response<Problem>(404, 'No such app in this account')
  @Response<Problem>(409, 'app_name_taken, resource_deleted')
  @Response<Problem>(
    422,
    'role_not_supported, invalid_app_settings, url_not_allowed, secret_required_for_new_host: the config sends the stored credentials to another host and they were not entered again; a customer-owned warehouse whose new settings fail its connection test: warehouse_connection_invalid, egress_address_refused: the host is or resolves to a non-public address, warehouse_connection_refused, warehouse_tls_failed, warehouse_login_failed, warehouse_database_missing, warehouse_permission_denied: the role may not create in the schema, warehouse_check_failed',
  )
  async updateApp(
    @Request() request: ExpressRequest,
    @Path() appId: string,
    @Body() body: UpdateAppBody,
  ): Promise<{ data: AppDetail }> {
    return { data: await this.apps.update(principalOf(request).accountId, appId, body) };
  }

  /**
   * Tests the connection of a customer-owned warehouse app (`postgres_warehouse`,
   * `clickhouse_warehouse`): connects through the egress guard (every address of the host must
   * be public), runs `SELECT 1`, and checks the user can create tables where the account's
   * tables go: PostgreSQL's schema (created when missing), ClickHouse's database (created when
   * missing; a probe table created, altered, filled, read and dropped). For an app that imports
   * (`stripe`, `shopify`, `hubspot`): one authenticated read at the vendor with the stored
   * credentials. Nothing of the app changes. Failures never echo the host, user or password.
   * An account makes at most APP_CONNECTION_TESTS_PER_MINUTE tests a minute (10 unless set),
   * counted with the saves that test a warehouse app's connection: then 429
   * `connection_tests_rate_limited` with Retry-After.
   */
  @Post('{appId}/test-connection')
  @Security('api_key', ['apps.write'])
  @Response<Problem>(404, 'No such app in this account')
  @Response<Problem>(409, 'resource_deleted')
  @Response<Problem>(
    422,
    'connection_test_not_supported: the app type has no connection test; credentials_required: the app has no credentials yet; credentials_rejected: the vendor refused the credentials (each credential field named in errors[]); connection_failed: the vendor could not be reached; connection_test_failed: the vendor answered otherwise; warehouse_connection_invalid, egress_address_refused: the host is or resolves to a non-public address, warehouse_connection_refused, warehouse_tls_failed, warehouse_login_failed, warehouse_database_missing, warehouse_permission_denied: the role may not create in the schema, warehouse_check_failed',
  )
  async testAppConnection(
    @Request() request: ExpressRequest,
    @Path() appId: string,
  ): Promise<{ data: AppConnectionTest }> {
    return { data: await this.apps.testConnection(principalOf(request).accountId, appId) };
  }

  /** Soft-deletes the app (`state: deleted`). Refused while an active source uses it. */
  @Delete('{appId}')
  @Security('api_key', ['apps.write'])
  @Response<Problem>(404, 'No such app in this account')
  @Response<Problem>(409, 'app_in_use: an active source still uses the app')
  async deleteApp(@Request() request: ExpressRequest, @Path() appId: string): Promise<{ data: AppDetail }> {
    return { data: await this.apps.delete(principalOf(request).accountId, appId) };
  }
}
