import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { DataSource } from 'typeorm';
import { AccountEntity } from '../accounts/account.entity';
import { ApiKeyEntity } from '../auth/api-key.entity';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { Me } from './me.dto';

/**
 * The signed-in key: its scopes, name and prefix, and its account's features. Any valid key
 * may read it (no scope): a client learns what it may do before it offers it.
 */
@Route('api/v1/me')
@Tags('Account')
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait',
)
export class MeController extends Controller {
  constructor(private readonly dataSource: DataSource) {
    super();
  }

  /** The API key of this request (never its secret), its scopes, and its account. */
  @Get()
  @Security('api_key', [])
  async getMe(@Request() request: ExpressRequest): Promise<{ data: Me }> {
    const principal = principalOf(request);
    const [key, account] = await Promise.all([
      this.dataSource.getRepository(ApiKeyEntity).findOneByOrFail({ id: principal.apiKeyId }),
      this.dataSource.getRepository(AccountEntity).findOneByOrFail({ id: principal.accountId }),
    ]);
    return {
      data: {
        key: {
          id: key.id,
          name: key.name,
          keyPrefix: key.keyPrefix,
          createdAt: key.createdAt.toISOString(),
        },
        scopes: [...principal.scopes],
        account: { id: account.id, name: account.name, features: [...principal.features] },
      },
    };
  }
}
