import type { DataSource } from 'typeorm';
import { badRequest } from '../http/api-errors';
import { placeOnDefault } from '../warehouse-registry/warehouse-registry';
import { AccountEntity } from './account.entity';

/** Workspace features an account can have; tasks need `automations`. */
export const accountFeatures = ['automations'] as const;
export type AccountFeature = (typeof accountFeatures)[number];

export class AccountService {
  constructor(private readonly dataSource: DataSource) {}

  async create(name: string, features: readonly string[] = []): Promise<AccountEntity> {
    const trimmed = name.trim();
    if (trimmed.length < 1 || trimmed.length > 200)
      throw badRequest('invalid_name', 'name must have 1 to 200 characters');
    const unknown = features.filter((f) => !(accountFeatures as readonly string[]).includes(f));
    if (unknown.length > 0) {
      throw badRequest(
        'unknown_feature',
        `Unknown feature ${unknown.join(', ')}; known: ${accountFeatures.join(', ')}`,
      );
    }
    // Placed in the same transaction: no account is ever seen without its warehouse.
    return this.dataSource.transaction(async (manager) => {
      const repository = manager.getRepository(AccountEntity);
      const account = await repository.save(
        repository.create({ name: trimmed, features: [...new Set(features)] }),
      );
      await placeOnDefault(manager, account.id);
      return account;
    });
  }

  async list(): Promise<AccountEntity[]> {
    return this.dataSource.getRepository(AccountEntity).find({ order: { createdAt: 'ASC' } });
  }
}
