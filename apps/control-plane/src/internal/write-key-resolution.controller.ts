import { Body, Controller, Hidden, Post, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { Problem } from '../http/problem';
import type {
  LookupWriteKeyBody,
  ResolveWriteKeyBody,
  TenantRecord,
  WriteKeyRecord,
} from './tenant-record.dto';
import type { WriteKeyResolver } from './write-key-resolver';

/**
 * Internal: the ingestion service resolves write keys here (hosted auth mode). Authenticated
 * with INTERNAL_SERVICE_TOKEN, never with an API key; kept out of the public document and,
 * in deployments, reachable only from ingestion. POST keeps the key out of URLs and logs.
 */
@Hidden()
@Route('internal/v1/write-keys')
@Tags('Internal')
export class WriteKeyResolutionController extends Controller {
  constructor(private readonly resolver: WriteKeyResolver) {
    super();
  }

  @Post('resolve')
  @Security('internal_token')
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'write_key_not_found')
  async resolveWriteKey(@Body() body: ResolveWriteKeyBody): Promise<{ data: WriteKeyRecord }> {
    return { data: await this.resolver.resolve(body.writeKey) };
  }

  /**
   * The delivery consumers look tenants up by the write key id an outbox record carries: the
   * only lookup that carries destinations' credentials, to the only processes that use them.
   */
  @Post('lookup')
  @Security('internal_token')
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'write_key_not_found')
  async lookupWriteKey(@Body() body: LookupWriteKeyBody): Promise<{ data: TenantRecord }> {
    return { data: await this.resolver.lookup(body.writeKeyId) };
  }
}
