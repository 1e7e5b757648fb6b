import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Delete,
  Get,
  Patch,
  Path,
  Post,
  Put,
  Query,
  Request,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import { forbidden } from '../http/api-errors';
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import type {
  BindFunctionBody,
  CreateFunctionBody,
  FunctionAnswer,
  FunctionBindingAnswer,
  FunctionSummary,
  FunctionTestAnswer,
  FunctionVersionAnswer,
  FunctionVersionSummary,
  TestFunctionBody,
  UpdateFunctionBody,
} from './function.dto';
import type { FunctionBindings, FunctionTarget } from './function-bindings';
import type { FunctionTestRun } from './function-test-run';
import type { FunctionService } from './function.service';

const VALIDATION =
  'validation_failed: a body, path or query value of the wrong shape (named in errors[]), code blank, above 64 KiB of UTF-8, or holding U+0000 or an unpaired surrogate';
const BIND_404 =
  'not_found: no such target in this account; function_version_not_found: no published version of a live function of this account has that id';
const BIND_409 = 'write_key_revoked; resource_deleted: the integration is deleted';
const KIND_MISMATCH =
  'function_kind_mismatch: a source function binds to a write key only, a destination function to an integration or the warehouse';

/**
 * Tenant functions (docs/management-api.md#functions): JavaScript that the delivery consumers
 * run on events in flight, edited as a draft and published as immutable versions that targets
 * bind.
 */
@Route('api/v1/functions')
@Tags('Functions')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(400, VALIDATION)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class FunctionsController extends Controller {
  constructor(
    private readonly functions: FunctionService,
    private readonly tests: FunctionTestRun,
  ) {
    super();
  }

  /** Creates a function with its first draft; nothing is published or bound. */
  @Post()
  @Security('api_key', ['functions.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(409, 'function_name_taken: a live function of the account has that name')
  async createFunction(
    @Request() request: ExpressRequest,
    @Body() body: CreateFunctionBody,
  ): Promise<FunctionAnswer> {
    const data = await this.functions.create(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Lists the account's functions, newest first, without their drafts.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['functions.read'])
  async listFunctions(
    @Request() request: ExpressRequest,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<FunctionSummary>> {
    return this.functions.list(principalOf(request).accountId, pageRequest(limit, offset));
  }

  /** One function with its draft code. */
  @Get('{functionId}')
  @Security('api_key', ['functions.read'])
  @Response<Problem>(404, 'not_found: no such function in this account')
  async getFunction(@Request() request: ExpressRequest, @Path() functionId: string): Promise<FunctionAnswer> {
    return { data: await this.functions.get(principalOf(request).accountId, functionId) };
  }

  /** Renames it, changes its description or replaces its draft; published versions never change. */
  @Patch('{functionId}')
  @Security('api_key', ['functions.write'])
  @Response<Problem>(404, 'not_found')
  @Response<Problem>(409, 'function_name_taken')
  async updateFunction(
    @Request() request: ExpressRequest,
    @Path() functionId: string,
    @Body() body: UpdateFunctionBody,
  ): Promise<FunctionAnswer> {
    return { data: await this.functions.update(principalOf(request).accountId, functionId, body) };
  }

  /**
   * Deletes a function: gone from the API, its name free again; its versions are kept for the
   * dead letters that name them.
   */
  @Delete('{functionId}')
  @Security('api_key', ['functions.write'])
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(404, 'not_found')
  @Response<Problem>(
    409,
    'function_bound: an integration, write key or the warehouse binds one of its versions; unbind first',
  )
  async deleteFunction(@Request() request: ExpressRequest, @Path() functionId: string): Promise<void> {
    await this.functions.remove(principalOf(request).accountId, functionId);
    this.setStatus(204);
  }

  /** Publishes the draft as the next version (1, 2, ...), frozen with its code's sha256. Nothing bound changes. */
  @Post('{functionId}/versions')
  @Security('api_key', ['functions.write'])
  @SuccessResponse(201, 'Published')
  @Response<Problem>(404, 'not_found')
  @Response<Problem>(409, 'draft_unchanged: the draft equals the newest version')
  async publishFunction(
    @Request() request: ExpressRequest,
    @Path() functionId: string,
  ): Promise<FunctionVersionAnswer> {
    const data = await this.functions.publish(principalOf(request).accountId, functionId);
    this.setStatus(201);
    return { data };
  }

  /**
   * The function's published versions, newest first, without their code.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get('{functionId}/versions')
  @Security('api_key', ['functions.read'])
  @Response<Problem>(404, 'not_found')
  async listFunctionVersions(
    @Request() request: ExpressRequest,
    @Path() functionId: string,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<FunctionVersionSummary>> {
    return this.functions.versions(principalOf(request).accountId, functionId, pageRequest(limit, offset));
  }

  /** A published version with its code, exactly as published. */
  @Get('{functionId}/versions/{versionId}')
  @Security('api_key', ['functions.read'])
  @Response<Problem>(404, 'not_found: no such function; function_version_not_found')
  async getFunctionVersion(
    @Request() request: ExpressRequest,
    @Path() functionId: string,
    @Path() versionId: string,
  ): Promise<FunctionVersionAnswer> {
    return { data: await this.functions.version(principalOf(request).accountId, functionId, versionId) };
  }

  /**
   * Runs the draft, pasted `code` or a published `versionId` on pasted `events` (at most 100) or
   * on the debugger's newest accepted events of `writeKeyId` (`limit`, at most 50): per event
   * what the function returned, dropped or failed with, its logs and CPU time. Nothing is
   * delivered or saved. `writeKeyId` also needs `write_keys.read` (the debugger's scope).
   */
  @Post('{functionId}/test')
  @Security('api_key', ['functions.write'])
  @Response<Problem>(
    404,
    'not_found: no such function (or write key) in this account; function_version_not_found',
  )
  @Response<Problem>(
    503,
    'function_runtime_unavailable: this control plane runs no functions; debugger_unavailable: `writeKeyId` needs the debugger (REDIS_URL)',
  )
  async testFunction(
    @Request() request: ExpressRequest,
    @Path() functionId: string,
    @Body() body: TestFunctionBody,
  ): Promise<FunctionTestAnswer> {
    const principal = principalOf(request);
    // The debugger's events are the write key's to read: the same scope as the debugger's.
    if (body.writeKeyId !== undefined && !principal.scopes.includes('write_keys.read'))
      throw forbidden('insufficient_scope', 'This API key lacks the scope write_keys.read');
    return { data: await this.tests.run(principal.accountId, functionId, body) };
  }
}

/** The function version an integration runs on its events (a destination function). */
@Route('api/v1/integrations/{integrationId}/function')
@Tags('Functions')
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class IntegrationFunctionController extends Controller {
  constructor(private readonly bindings: FunctionBindings) {
    super();
  }

  private target(integrationId: string): FunctionTarget {
    return { type: 'integration', id: integrationId };
  }

  /**
   * Binds a destination function's version, replacing the integration's binding (an older
   * version: a rollback). Delivery runs it within 10 s.
   */
  @Put()
  @Security('api_key', ['functions.write', 'integrations.write'])
  @Response<Problem>(400, 'validation_failed')
  @Response<Problem>(404, BIND_404)
  @Response<Problem>(409, BIND_409)
  @Response<Problem>(422, KIND_MISMATCH)
  async bindIntegrationFunction(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
    @Body() body: BindFunctionBody,
  ): Promise<FunctionBindingAnswer> {
    const accountId = principalOf(request).accountId;
    return { data: await this.bindings.bind(accountId, this.target(integrationId), body.functionVersionId) };
  }

  @Get()
  @Security('api_key', ['functions.read', 'integrations.read'])
  @Response<Problem>(404, 'not_found: no such integration; function_binding_not_found: it binds no function')
  async getIntegrationFunction(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
  ): Promise<FunctionBindingAnswer> {
    return { data: await this.bindings.get(principalOf(request).accountId, this.target(integrationId)) };
  }

  /** Unbinds: the integration's events go as they are. Idempotent. */
  @Delete()
  @Security('api_key', ['functions.write', 'integrations.write'])
  @SuccessResponse(204, 'Unbound')
  @Response<Problem>(404, 'not_found: no such integration in this account')
  async unbindIntegrationFunction(
    @Request() request: ExpressRequest,
    @Path() integrationId: string,
  ): Promise<void> {
    await this.bindings.unbind(principalOf(request).accountId, this.target(integrationId));
    this.setStatus(204);
  }
}

/** The function version the account's warehouse runs on the rows it loads (a destination function). */
@Route('api/v1/warehouse/function')
@Tags('Functions')
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class WarehouseFunctionController extends Controller {
  constructor(private readonly bindings: FunctionBindings) {
    super();
  }

  /** Binds a destination function's version to the account's warehouse, replacing its binding. */
  @Put()
  @Security('api_key', ['functions.write', 'apps.write'])
  @Response<Problem>(400, 'validation_failed')
  @Response<Problem>(404, 'function_version_not_found')
  @Response<Problem>(422, KIND_MISMATCH)
  async bindWarehouseFunction(
    @Request() request: ExpressRequest,
    @Body() body: BindFunctionBody,
  ): Promise<FunctionBindingAnswer> {
    const accountId = principalOf(request).accountId;
    return { data: await this.bindings.bind(accountId, { type: 'warehouse' }, body.functionVersionId) };
  }

  @Get()
  @Security('api_key', ['functions.read', 'apps.read'])
  @Response<Problem>(404, 'function_binding_not_found: the warehouse binds no function')
  async getWarehouseFunction(@Request() request: ExpressRequest): Promise<FunctionBindingAnswer> {
    return { data: await this.bindings.get(principalOf(request).accountId, { type: 'warehouse' }) };
  }

  /** Unbinds: rows are loaded as the events arrive. Idempotent. */
  @Delete()
  @Security('api_key', ['functions.write', 'apps.write'])
  @SuccessResponse(204, 'Unbound')
  async unbindWarehouseFunction(@Request() request: ExpressRequest): Promise<void> {
    await this.bindings.unbind(principalOf(request).accountId, { type: 'warehouse' });
    this.setStatus(204);
  }
}

/** The source function a write key's events will run through before any destination. */
@Route('api/v1/write-keys/{writeKeyId}/function')
@Tags('Functions')
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class WriteKeyFunctionController extends Controller {
  constructor(private readonly bindings: FunctionBindings) {
    super();
  }

  private target(writeKeyId: string): FunctionTarget {
    return { type: 'write_key', id: writeKeyId };
  }

  /** Binds a source function's version to the write key, replacing its binding. */
  @Put()
  @Security('api_key', ['functions.write', 'write_keys.write'])
  @Response<Problem>(400, 'validation_failed')
  @Response<Problem>(404, BIND_404)
  @Response<Problem>(409, 'write_key_revoked')
  @Response<Problem>(422, KIND_MISMATCH)
  async bindWriteKeyFunction(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
    @Body() body: BindFunctionBody,
  ): Promise<FunctionBindingAnswer> {
    const accountId = principalOf(request).accountId;
    return { data: await this.bindings.bind(accountId, this.target(writeKeyId), body.functionVersionId) };
  }

  @Get()
  @Security('api_key', ['functions.read', 'write_keys.read'])
  @Response<Problem>(404, 'not_found: no such write key; function_binding_not_found: it binds no function')
  async getWriteKeyFunction(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
  ): Promise<FunctionBindingAnswer> {
    return { data: await this.bindings.get(principalOf(request).accountId, this.target(writeKeyId)) };
  }

  /** Unbinds. Idempotent. */
  @Delete()
  @Security('api_key', ['functions.write', 'write_keys.write'])
  @SuccessResponse(204, 'Unbound')
  @Response<Problem>(404, 'not_found: no such write key in this account')
  async unbindWriteKeyFunction(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
  ): Promise<void> {
    await this.bindings.unbind(principalOf(request).accountId, this.target(writeKeyId));
    this.setStatus(204);
  }
}
