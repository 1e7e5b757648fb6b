import { Column, CreateDateColumn, PrimaryGeneratedColumn, UpdateDateColumn, type Repository } from 'typeorm';
import { notFound } from '../http/api-errors';
import { requireId } from '../http/ids';
import type { ResourceState } from '../http/resource-state';

/** The columns every soft-deletable resource of an account has (apps, sources, integrations). */
export abstract class AccountResourceEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'text' })
  state!: ResourceState;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt!: Date | null;
}

/** The resource, scoped to the account: another account's is as unknown as a missing one. */
export async function findInAccount<T extends AccountResourceEntity>(
  repository: Repository<T>,
  resource: string,
  accountId: string,
  id: string,
): Promise<T> {
  const found = await repository.findOneBy({ id: requireId(resource, id), accountId } as never);
  if (!found) throw notFound(resource, id);
  return found;
}

/** Soft delete: the row stays, as `deleted`. Deleting again changes nothing. */
export async function softDelete<T extends AccountResourceEntity>(
  repository: Repository<T>,
  entity: T,
): Promise<T> {
  if (entity.state === 'deleted') return entity;
  entity.state = 'deleted';
  entity.deletedAt = new Date();
  return repository.save(entity);
}
