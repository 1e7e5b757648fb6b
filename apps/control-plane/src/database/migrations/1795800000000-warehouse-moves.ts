import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Moving an account between warehouses online: the move's record (stage, progress, what the
 * comparison found), the placement's move target (consumers write to both while it is set), and
 * jobs of kind `warehouse_move`, which belong to neither a source nor an integration.
 */
export class WarehouseMoves1795800000000 implements MigrationInterface {
  name = 'WarehouseMoves1795800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE account_warehouses ADD COLUMN move_to_warehouse_id uuid REFERENCES warehouses (id) ON DELETE RESTRICT',
    );
    // The unnamed checks of the jobs table (kind, and one owner of source or integration).
    const checks = (await queryRunner.query(
      `SELECT conname FROM pg_constraint
        WHERE conrelid = 'jobs'::regclass AND contype = 'c'
          AND (pg_get_constraintdef(oid) LIKE '%integration_run%' OR pg_get_constraintdef(oid) LIKE '%integration_id IS NULL%')`,
    )) as { conname: string }[];
    for (const { conname } of checks)
      await queryRunner.query(`ALTER TABLE jobs DROP CONSTRAINT "${conname}"`);
    await queryRunner.query(`
      ALTER TABLE jobs
        ADD CONSTRAINT jobs_kind CHECK (kind IN ('source_sync', 'integration_run', 'warehouse_move')),
        ADD CONSTRAINT jobs_owner CHECK (
          CASE kind WHEN 'warehouse_move' THEN source_id IS NULL AND integration_id IS NULL
                    ELSE (source_id IS NULL) <> (integration_id IS NULL) END)`);
    await queryRunner.query(`
      CREATE TABLE warehouse_moves (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        from_warehouse_id uuid NOT NULL REFERENCES warehouses (id) ON DELETE RESTRICT,
        to_warehouse_id uuid NOT NULL REFERENCES warehouses (id) ON DELETE RESTRICT,
        schema text NOT NULL,
        job_id uuid REFERENCES jobs (id) ON DELETE SET NULL,
        stage text NOT NULL CHECK (stage IN ('queued', 'copy', 'verify', 'cut_over', 'drain', 'retire', 'done', 'failed')),
        progress jsonb NOT NULL DEFAULT '{}',
        verification jsonb,
        copy_attempts integer NOT NULL DEFAULT 0,
        error jsonb,
        targeted_at timestamptz,
        cut_over_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        CHECK (from_warehouse_id <> to_warehouse_id)
      )`);
    // Exactly one active move per account, held by the database.
    await queryRunner.query(
      "CREATE UNIQUE INDEX warehouse_moves_one_active ON warehouse_moves (account_id) WHERE stage NOT IN ('done', 'failed')",
    );
    await queryRunner.query('CREATE INDEX warehouse_moves_by_time ON warehouse_moves (created_at DESC)');
    await queryRunner.query('CREATE UNIQUE INDEX warehouse_moves_by_job ON warehouse_moves (job_id)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE warehouse_moves');
    await queryRunner.query("DELETE FROM jobs WHERE kind = 'warehouse_move'");
    await queryRunner.query('ALTER TABLE jobs DROP CONSTRAINT jobs_owner, DROP CONSTRAINT jobs_kind');
    await queryRunner.query(`
      ALTER TABLE jobs
        ADD CONSTRAINT jobs_kind_check CHECK (kind IN ('source_sync', 'integration_run')),
        ADD CONSTRAINT jobs_check CHECK ((source_id IS NULL) <> (integration_id IS NULL))`);
    await queryRunner.query('ALTER TABLE account_warehouses DROP COLUMN move_to_warehouse_id');
  }
}
