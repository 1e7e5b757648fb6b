import type { DataSource } from 'typeorm';
import { IsNull } from 'typeorm';
import { AccountEntity } from '../accounts/account.entity';
import { forbidden, unauthenticated } from '../http/api-errors';
import { ApiKeyEntity } from './api-key.entity';
import type { Principal } from './principal';
import { isScope, type Scope } from './scopes';
import { hashToken } from './secret-token';

const LAST_USED_RESOLUTION_MS = 60_000;

/** Resolves `Authorization: Bearer <API_KEY>` to a principal and checks scopes. */
export class ApiKeyAuthenticator {
  private readonly touched = new Map<string, number>();

  constructor(private readonly dataSource: DataSource) {}

  async authenticate(authorization: string | undefined, required: readonly string[]): Promise<Principal> {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match?.[1]) {
      throw unauthenticated('unauthenticated', 'Send an API key as Authorization: Bearer <API_KEY>');
    }
    const key = await this.dataSource
      .getRepository(ApiKeyEntity)
      .findOneBy({ keyHash: hashToken(match[1]), revokedAt: IsNull() });
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
