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
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import type {
  CreateWriteKeyBody,
  RotateWriteKeyBody,
  UpdateWriteKeyBody,
  WriteKeyCreated,
  WriteKeyState,
  WriteKeyView,
} from './write-key.dto';
import type { WriteKeyService } from './write-key.service';

/** Keys the browser SDK sends to the ingestion service. */
@Route('api/v1/write-keys')
@Tags('Write keys')
@Response<Problem>(400, 'Invalid request')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class WriteKeysController extends Controller {
  constructor(private readonly writeKeys: WriteKeyService) {
    super();
  }

  /** Creates a write key. The response holds the key itself; it is never shown again. */
  @Post()
  @Security('api_key', ['write_keys.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    409,
    'account_limit_reached: the account holds its ACCOUNT_MAX_WRITE_KEYS active write keys (revoke one to free a slot)',
  )
  @Response<Problem>(422, 'invalid_rate_limit: a rate limit is not a whole number from 1 to its ceiling')
  async createWriteKey(
    @Request() request: ExpressRequest,
    @Body() body: CreateWriteKeyBody,
  ): Promise<{ data: WriteKeyCreated }> {
    const data = await this.writeKeys.create(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Lists write keys, masked: active ones by default, revoked ones with `state=revoked`.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['write_keys.read'])
  async listWriteKeys(
    @Request() request: ExpressRequest,
    @Query() limit?: number,
    @Query() offset?: number,
    @Query() state?: WriteKeyState,
  ): Promise<ListResponse<WriteKeyView>> {
    return this.writeKeys.list(principalOf(request).accountId, state, pageRequest(limit, offset));
  }

  @Get('{writeKeyId}')
  @Security('api_key', ['write_keys.read'])
  @Response<Problem>(404, 'No such write key in this account')
  async getWriteKey(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
  ): Promise<{ data: WriteKeyView }> {
    return { data: await this.writeKeys.get(principalOf(request).accountId, writeKeyId) };
  }

  /** Renames the key, sets its allowed origins (replacing the list) or its rate limits. */
  @Patch('{writeKeyId}')
  @Security('api_key', ['write_keys.write'])
  @Response<Problem>(404, 'No such write key in this account')
  @Response<Problem>(409, 'write_key_revoked')
  @Response<Problem>(422, 'invalid_rate_limit: a rate limit is not a whole number from 1 to its ceiling')
  async updateWriteKey(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
    @Body() body: UpdateWriteKeyBody,
  ): Promise<{ data: WriteKeyView }> {
    return { data: await this.writeKeys.update(principalOf(request).accountId, writeKeyId, body) };
  }

  /**
   * Gives the key a new secret, in this answer only (`key`, like create's); the old secret is
   * refused from then on (ingestion hears it as it hears a revocation). The key keeps its id,
   * settings and debugger events.
   */
  @Post('{writeKeyId}/rotate')
  @Security('api_key', ['write_keys.write'])
  @Response<Problem>(404, 'No such write key in this account')
  @Response<Problem>(
    409,
    'write_key_revoked: the key is revoked; write_key_rotated: another request rotated it meanwhile',
  )
  async rotateWriteKey(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
    // Validated only: a body with any field is refused before anything is rotated. Named
    // `body`, as tsoa names its fields in the errors (`body.name`).
    // eslint-disable-next-line @typescript-eslint/no-unused-vars -- read by tsoa's validation alone
    @Body() body?: RotateWriteKeyBody,
  ): Promise<{ data: WriteKeyCreated }> {
    return { data: await this.writeKeys.rotate(principalOf(request).accountId, writeKeyId) };
  }

  /** Revokes the key (`state: revoked`); ingestion refuses it from then on. */
  @Delete('{writeKeyId}')
  @Security('api_key', ['write_keys.write'])
  @Response<Problem>(404, 'No such write key in this account')
  async revokeWriteKey(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
  ): Promise<{ data: WriteKeyView }> {
    return { data: await this.writeKeys.revoke(principalOf(request).accountId, writeKeyId) };
  }
}
