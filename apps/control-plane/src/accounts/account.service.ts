import type { DataSource } from 'typeorm';
import { badRequest } from '../http/api-errors';
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
    const repository = this.dataSource.getRepository(AccountEntity);
    return repository.save(repository.create({ name: trimmed, features: [...new Set(features)] }));
  }

  async list(): Promise<AccountEntity[]> {
    return this.dataSource.getRepository(AccountEntity).find({ order: { createdAt: 'ASC' } });
  }
}
