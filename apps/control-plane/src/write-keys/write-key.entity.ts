import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** A key the browser SDK sends to ingestion; only its SHA-256 is stored. */
@Entity({ name: 'write_keys' })
export class WriteKeyEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ name: 'key_prefix', type: 'text' })
  keyPrefix!: string;

  @Column({ name: 'key_hash', type: 'text' })
  keyHash!: string;

  /** Hostnames; a request's Origin must be one of them or a subdomain of one. Empty: any. */
  @Column({ name: 'allowed_origins', type: 'text', array: true })
  allowedOrigins!: string[];

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  /** Override of the shared per-key limit of ingestion; null: the service default. */
  @Column({ name: 'rate_limit_events_per_second', type: 'integer', nullable: true })
  rateLimitEventsPerSecond!: number | null;

  @Column({ name: 'rate_limit_events_per_day', type: 'integer', nullable: true })
  rateLimitEventsPerDay!: number | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt!: Date | null;
}
