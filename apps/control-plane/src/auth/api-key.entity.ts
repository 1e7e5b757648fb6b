import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn } from 'typeorm';

/** An API key of the management API; only its SHA-256 is stored. */
@Entity({ name: 'api_keys' })
export class ApiKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'text' })
  name!: string;

  /** The first characters of the key, enough to recognise it in a list. */
  @Column({ name: 'key_prefix', type: 'text' })
  keyPrefix!: string;

  @Column({ name: 'key_hash', type: 'text' })
  keyHash!: string;

  @Column({ type: 'text', array: true })
  scopes!: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt!: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
