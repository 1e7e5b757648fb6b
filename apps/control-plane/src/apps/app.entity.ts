import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';
import type { ResourceState } from '../http/resource-state';

export type AppRole = 'source' | 'destination';

/** A connection to an external platform. Credentials are stored encrypted only. */
@Entity({ name: 'apps' })
export class AppEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ name: 'app_type', type: 'text' })
  appType!: string;

  @Column({ name: 'display_name', type: 'text' })
  displayName!: string;

  @Column({ type: 'text', array: true })
  role!: AppRole[];

  @Column({ type: 'text' })
  state!: ResourceState;

  @Column({ name: 'error_message', type: 'text', nullable: true })
  errorMessage!: string | null;

  @Column({ name: 'last_sync_at', type: 'timestamptz', nullable: true })
  lastSyncAt!: Date | null;

  @Column({ type: 'jsonb' })
  config!: Record<string, unknown>;

  @Column({ type: 'jsonb' })
  permissions!: string[];

  /** AES-256-GCM envelope (see credential-cipher.ts); null when no credentials were given. */
  @Column({ name: 'credentials_ciphertext', type: 'text', nullable: true })
  credentialsCiphertext!: string | null;

  @Column({ name: 'credentials_key_id', type: 'text', nullable: true })
  credentialsKeyId!: string | null;

  @Column({ name: 'consecutive_failure_count', type: 'integer' })
  consecutiveFailureCount!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt!: Date | null;
}
