import { Column, Entity } from 'typeorm';
import { AccountResourceEntity } from '../database/account-resource';

/** `warehouse`: a customer-owned warehouse the account's data is loaded into. */
export type AppRole = 'source' | 'destination' | 'warehouse';

/** A connection to an external platform. Credentials are stored encrypted only. */
@Entity({ name: 'apps' })
export class AppEntity extends AccountResourceEntity {
  @Column({ name: 'app_type', type: 'text' })
  appType!: string;

  @Column({ name: 'display_name', type: 'text' })
  displayName!: string;

  @Column({ type: 'text', array: true })
  role!: AppRole[];

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
}
