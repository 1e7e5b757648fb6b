import type { Request } from 'express';
import type { DataSource } from 'typeorm';
import { IsNull } from 'typeorm';
import { AccountEntity } from '../accounts/account.entity';
import { forbidden, unauthenticated } from '../http/api-errors';
import { ApiKeyEntity } from './api-key.entity';
import type { Principal } from './principal';
import { isScope, type Scope } from './scopes';
import { bearerToken } from './bearer-token';
import { hashToken } from './secret-token';

const LAST_USED_RESOLUTION_MS = 60_000;

/** Resolves `Authorization: Bearer <API_KEY>` to a principal and checks scopes. */
export class ApiKeyAuthenticator {
  private readonly touched = new Map<string, number>();
  // The rate limiter and then the route's authentication both need the key (a route with
  // alternative scopes asks once per alternative): one lookup per request serves them all.
  private readonly presented = new WeakMap<Request, Promise<ApiKeyEntity | null>>();

  constructor(private readonly dataSource: DataSource) {}

  /** The active key the request presents, or null (none, unknown or revoked). */
  identify(request: Request): Promise<ApiKeyEntity | null> {
    let found = this.presented.get(request);
    if (!found) {
      found = this.lookup(request.headers.authorization);
      this.presented.set(request, found);
    }
    return found;
  }

  async authenticate(request: Request, required: readonly string[]): Promise<Principal> {
    if (!bearerToken(request.headers.authorization)) {
      throw unauthenticated('unauthenticated', 'Send an API key as Authorization: Bearer <API_KEY>');
    }
    const key = await this.identify(request);
    if (!key) throw unauthenticated('invalid_api_key', 'The API key is not valid or has been revoked');

    const missing = required.filter((scope) => !key.scopes.includes(scope));
    if (missing.length > 0) {
      throw forbidden('insufficient_scope', `This API key lacks the scope ${missing.join(', ')}`);
    }
    const account = await this.dataSource.getRepository(AccountEntity).findOneByOrFail({ id: key.accountId });
    this.touch(key.id);
    return {
      accountId: key.accountId,
      apiKeyId: key.id,
      scopes: key.scopes.filter(isScope) as Scope[],
      features: account.features,
    };
  }

  /** Whether the key is still active: a long-lived stream asks again while it runs. */
  async isActive(apiKeyId: string): Promise<boolean> {
    return this.dataSource.getRepository(ApiKeyEntity).existsBy({ id: apiKeyId, revokedAt: IsNull() });
  }

  private async lookup(authorization: string | undefined): Promise<ApiKeyEntity | null> {
    const token = bearerToken(authorization);
    if (!token) return null;
    return this.dataSource
      .getRepository(ApiKeyEntity)
      .findOneBy({ keyHash: hashToken(token), revokedAt: IsNull() });
  }

  /** Records last use at minute resolution, without a write per request. */
  private touch(id: string): void {
    const now = Date.now();
    if (now - (this.touched.get(id) ?? 0) < LAST_USED_RESOLUTION_MS) return;
    this.touched.set(id, now);
    void this.dataSource
      .getRepository(ApiKeyEntity)
      .update({ id }, { lastUsedAt: new Date(now) })
      .catch(() => undefined);
  }
}
