import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tracking plans (docs/tracking-plans.md, "Management API"). A plan's draft is edited in place;
 * publishing copies it into `tracking_plan_versions`, which are never updated: `document` is the
 * plan's canonical JSON, the very text its `hash` is the sha256 of. The draft is text too, not
 * jsonb: jsonb refuses `\u0000` and unpaired surrogates, which a plan's names and keys may hold.
 * A write key binds at most one plan (`tracking_plan_bindings`): a pinned version or, with
 * `pinned_version` null, the latest; the composite key keeps a pin on a version that exists, and
 * a bound plan cannot be deleted under its keys.
 */
export class TrackingPlans1796400000000 implements MigrationInterface {
  name = 'TrackingPlans1796400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tracking_plans (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        draft text NOT NULL,
        draft_hash text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      'CREATE INDEX tracking_plans_account_created ON tracking_plans (account_id, created_at DESC, id DESC)',
    );
    await queryRunner.query(`
      CREATE TABLE tracking_plan_versions (
        plan_id uuid NOT NULL REFERENCES tracking_plans(id) ON DELETE CASCADE,
        version integer NOT NULL CHECK (version >= 1),
        document text NOT NULL,
        hash text NOT NULL,
        published_at timestamptz NOT NULL DEFAULT now(),
        published_by_api_key_id uuid REFERENCES api_keys(id) ON DELETE SET NULL,
        PRIMARY KEY (plan_id, version)
      )`);
    await queryRunner.query(`
      CREATE TABLE tracking_plan_bindings (
        write_key_id uuid PRIMARY KEY REFERENCES write_keys(id) ON DELETE CASCADE,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        plan_id uuid NOT NULL REFERENCES tracking_plans(id),
        pinned_version integer,
        policy jsonb NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        FOREIGN KEY (plan_id, pinned_version) REFERENCES tracking_plan_versions (plan_id, version)
      )`);
    await queryRunner.query('CREATE INDEX tracking_plan_bindings_plan ON tracking_plan_bindings (plan_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE tracking_plan_bindings');
    await queryRunner.query('DROP TABLE tracking_plan_versions');
    await queryRunner.query('DROP TABLE tracking_plans');
  }
}
