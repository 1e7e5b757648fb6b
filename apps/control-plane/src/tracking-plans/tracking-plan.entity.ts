import {
  Column,
  CreateDateColumn,
  Entity,
  PrimaryColumn,
  PrimaryGeneratedColumn,
  UpdateDateColumn,
} from 'typeorm';
import type { PlanPolicy } from '@pipeline/tracking-plans';

/** An account's tracking plan: its name and the draft that the next publish freezes. */
@Entity({ name: 'tracking_plans' })
export class TrackingPlanEntity {
  @PrimaryGeneratedColumn('uuid')
  id!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text' })
  description!: string;

  /** The draft's canonical JSON: always a plan checkPlan accepted. */
  @Column({ type: 'text' })
  draft!: string;

  /** planHash of the draft, compared with the latest version's to refuse an unchanged publish. */
  @Column({ name: 'draft_hash', type: 'text' })
  draftHash!: string;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}

/** A published version: written once, never updated. */
@Entity({ name: 'tracking_plan_versions' })
export class TrackingPlanVersionEntity {
  @PrimaryColumn({ name: 'plan_id', type: 'uuid' })
  planId!: string;

  @PrimaryColumn({ type: 'integer' })
  version!: number;

  /** canonicalJson(plan): the exact text `hash` is the sha256 of. */
  @Column({ type: 'text' })
  document!: string;

  @Column({ type: 'text' })
  hash!: string;

  @Column({ name: 'published_at', type: 'timestamptz' })
  publishedAt!: Date;

  @Column({ name: 'published_by_api_key_id', type: 'uuid', nullable: true })
  publishedByApiKeyId!: string | null;
}

/** The plan a write key binds, at a pinned version or (null) the latest, with its policy. */
@Entity({ name: 'tracking_plan_bindings' })
export class TrackingPlanBindingEntity {
  @PrimaryColumn({ name: 'write_key_id', type: 'uuid' })
  writeKeyId!: string;

  @Column({ name: 'account_id', type: 'uuid' })
  accountId!: string;

  @Column({ name: 'plan_id', type: 'uuid' })
  planId!: string;

  @Column({ name: 'pinned_version', type: 'integer', nullable: true })
  pinnedVersion!: number | null;

  @Column({ type: 'jsonb' })
  policy!: PlanPolicy;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
