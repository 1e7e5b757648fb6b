import { Column, CreateDateColumn, Entity, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** A unit of agent work: a template (agent goal) with its launch-time params. */
@Entity({ name: 'tasks' })
export class TaskEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ name: 'template_id', type: 'text' })
  templateId!: string;

  /** The template version the task was created with. */
  @Column({ name: 'template_version', type: 'integer' })
  templateVersion!: number;

  @Column({ type: 'text' })
  title!: string;

  /** Launch-time params, validated against the template's schema (defaults filled in). */
  @Column({ type: 'jsonb' })
  params!: Record<string, unknown>;

  @Column({ name: 'created_by_api_key_id', type: 'uuid', nullable: true })
  createdByApiKeyId!: string | null;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
