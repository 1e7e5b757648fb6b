import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

export type FunctionKind = 'destination' | 'source';

/** What a function binding names: an integration, a write key, or (no id) the account's warehouse. */
export type FunctionTargetType = 'integration' | 'warehouse' | 'write_key';

/** An account's function: its name and the draft code that the next publish freezes. */
@Entity({ name: 'functions' })
export class FunctionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  description!: string;

  @Column({ type: 'text' })
  kind!: FunctionKind;

  @Column({ name: 'draft_code', type: 'text' })
  draftCode!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;

  /** Set by a delete: the row and its versions stay, since dead letters name the versions. */
  @Column({ name: 'deleted_at', type: 'timestamptz', nullable: true })
  deletedAt!: Date | null;
}

/** A published version: written once; a trigger refuses any update. */
@Entity({ name: 'function_versions' })
export class FunctionVersionEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'function_id', type: 'uuid' })
  functionId!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'integer' })
  version!: number;

  @Column({ type: 'text' })
  code!: string;

  /** sha256 of `code` (UTF-8), lower-case hex. */
  @Column({ name: 'code_hash', type: 'text' })
  codeHash!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;
}

/** The version a target runs: one binding per integration, write key, or account warehouse. */
@Entity({ name: 'function_bindings' })
export class FunctionBindingEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ name: 'target_type', type: 'text' })
  targetType!: FunctionTargetType;

  /** The integration's or write key's id; null for the account's warehouse. */
  @Column({ name: 'target_id', type: 'uuid', nullable: true })
  targetId!: string | null;

  @Column({ name: 'function_version_id', type: 'uuid' })
  functionVersionId!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
