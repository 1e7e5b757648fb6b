import type { Request as ExpressRequest } from 'express';
import { Body, Controller, Hidden, Post, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { AppError } from '@pipeline/errors';
import { internalCallerOf } from '../auth/authentication';
import type { Problem } from '../http/problem';
import type {
  LookupWriteKeyBody,
  ResolveWriteKeyBody,
  TenantRecord,
  WriteKeyRecord,
} from './tenant-record.dto';
import type { WriteKeyResolver } from './write-key-resolver';

/**
 * Internal: ingestion resolves write keys here (hosted auth mode), the forwarding consumers look
 * tenants up. Each caller has its own token (INTERNAL_TOKEN_INGESTION,
 * INTERNAL_TOKEN_DELIVERY_<APP TYPE>), never an API key; kept out of the public document and, in
 * deployments, reachable only from those pods. POST keeps the key out of URLs and logs.
 */
@Hidden()
@Route('internal/v1/write-keys')
@Tags('Internal')
export class WriteKeyResolutionController extends Controller {
  constructor(private readonly resolver: WriteKeyResolver) {
    super();
  }

  @Post('resolve')
  @Security('internal_token', ['write_keys.resolve'])
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'write_key_not_found')
  async resolveWriteKey(@Body() body: ResolveWriteKeyBody): Promise<{ data: WriteKeyRecord }> {
    return { data: await this.resolver.resolve(body.writeKey) };
  }

  /**
   * The delivery consumers look tenants up by the write key id an outbox record carries: the
   * only lookup that carries destinations' credentials, and each consumer gets those of its own
   * app type only (a webhook consumer never holds an Amplitude key), with the function versions
   * those integrations bind. The warehouse consumer reads its function with the account's
   * placement (/internal/v1/warehouses/resolve), never here.
   */
  @Post('lookup')
  @Security('internal_token', ['write_keys.lookup'])
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'write_key_not_found')
  async lookupWriteKey(
    @Request() request: ExpressRequest,
    @Body() body: LookupWriteKeyBody,
  ): Promise<{ data: TenantRecord }> {
    const caller = internalCallerOf(request);
    // The scope admits the delivery callers only; this narrows the type should scopes ever change.
    if (caller.caller !== 'delivery')
      throw new AppError(401, 'invalid_service_token', "This endpoint needs its caller's internal token");
    return { data: await this.resolver.lookup(body.writeKeyId, caller.appType) };
  }
}
