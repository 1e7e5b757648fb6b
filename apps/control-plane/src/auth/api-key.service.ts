import type { DataSource } from 'typeorm';
import { IsNull } from 'typeorm';
import { AccountEntity } from '../accounts/account.entity';
import { notFound } from '../http/api-errors';
import { isUuid } from '../http/ids';
import { ApiKeyEntity } from './api-key.entity';
import { checkScopes } from './scopes';
import { issueToken } from './secret-token';

export interface IssuedApiKey {
  /** Shown once; only its hash is stored. */
  apiKey: string;
  record: ApiKeyEntity;
}

/** Issues and revokes API keys; used by the operator CLI. */
export class ApiKeyService {
  constructor(private readonly dataSource: DataSource) {}

  async requireAccount(accountId: string): Promise<void> {
    const exists =
      isUuid(accountId) && (await this.dataSource.getRepository(AccountEntity).existsBy({ id: accountId }));
    if (!exists) throw notFound('account', accountId);
  }

  async issue(accountId: string, name: string, scopes: readonly string[]): Promise<IssuedApiKey> {
    await this.requireAccount(accountId);
    const granted = checkScopes(scopes);
    const { token, prefix, hash } = issueToken('plk');
    const repository = this.dataSource.getRepository(ApiKeyEntity);
    const record = await repository.save(
      repository.create({
        accountId,
        name: name.trim() || 'API key',
        keyPrefix: prefix,
        keyHash: hash,
        scopes: granted,
      }),
    );
    return { apiKey: token, record };
  }

  async revoke(id: string): Promise<ApiKeyEntity> {
    const repository = this.dataSource.getRepository(ApiKeyEntity);
    const key = isUuid(id) ? await repository.findOneBy({ id }) : null;
    if (!key) throw notFound('API key', id);
    if (!key.revokedAt) {
      key.revokedAt = new Date();
      await repository.save(key);
    }
    return key;
  }

  async list(accountId: string): Promise<ApiKeyEntity[]> {
    return this.dataSource
      .getRepository(ApiKeyEntity)
      .find({ where: { accountId, revokedAt: IsNull() }, order: { createdAt: 'ASC' } });
  }
}
