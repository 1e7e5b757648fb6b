import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import type { WarehouseEngineName, WarehouseTlsMode } from '@pipeline/tenancy';

export const warehouseStatuses = ['active', 'unavailable', 'misconfigured'] as const;
/** What the warehouse consumer last met there: `active` until it reports otherwise. */
export type WarehouseStatus = (typeof warehouseStatuses)[number];

export type WarehouseOwner = 'platform' | 'customer';

/** A server accounts' warehouse data lives on; its password is sealed with the credential keys. */
@Entity({ name: 'warehouses' })
export class WarehouseEntity {
  // Set by the registry before the insert: the id is bound into the sealed password.
  @PrimaryColumn({ type: 'uuid' })
  id!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  engine!: WarehouseEngineName;

  @Column({ type: 'text' })
  owner!: WarehouseOwner;

  /** The owning account of a customer warehouse; null for the platform's. */
  @Column({ name: 'account_id', type: 'uuid', nullable: true })
  accountId!: string | null;

  /** The postgres_warehouse app a customer warehouse is; null for the platform's. */
  @Column({ name: 'app_id', type: 'uuid', nullable: true })
  appId!: string | null;

  /**
   * The schema an account placed here loads into: the app's for a customer warehouse; null for
   * the platform's, where each account has its own `account_<id>`.
   */
  @Column({ type: 'text', nullable: true })
  schema!: string | null;

  @Column({ type: 'text' })
  host!: string;

  @Column({ type: 'integer' })
  port!: number;

  @Column({ type: 'text' })
  database!: string;

  @Column({ type: 'text' })
  user!: string;

  @Column({ name: 'password_ciphertext', type: 'text' })
  passwordCiphertext!: string;

  @Column({ name: 'password_key_id', type: 'text' })
  passwordKeyId!: string;

  @Column({ name: 'tls_mode', type: 'text' })
  tlsMode!: WarehouseTlsMode;

  @Column({ name: 'max_connections', type: 'integer' })
  maxConnections!: number;

  @Column({ name: 'is_default', type: 'boolean' })
  isDefault!: boolean;

  @Column({ type: 'text' })
  status!: WarehouseStatus;

  @Column({ name: 'status_detail', type: 'text', nullable: true })
  statusDetail!: string | null;

  @Column({ name: 'status_changed_at', type: 'timestamptz' })
  statusChangedAt!: Date;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** Where an account's warehouse data lives now. */
@Entity({ name: 'account_warehouses' })
export class AccountWarehouseEntity {
  @PrimaryColumn({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ name: 'warehouse_id', type: 'uuid' })
  warehouseId!: string;

  @Column({ type: 'text' })
  schema!: string;

  @Column({ type: 'integer' })
  epoch!: number;

  /** While a move copies the account: the warehouse rows are written to as well. */
  @Column({ name: 'move_to_warehouse_id', type: 'uuid', nullable: true })
  moveToWarehouseId!: string | null;

  @Column({ name: 'placed_at', type: 'timestamptz' })
  placedAt!: Date;
}
