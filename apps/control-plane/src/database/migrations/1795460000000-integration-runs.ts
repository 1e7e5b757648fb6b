import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Integration runs: when each integration runs next, and per task the watermark its last
 * successful delivery reached, so a run sends only rows that changed since.
 */
export class IntegrationRuns1795460000000 implements MigrationInterface {
  name = 'IntegrationRuns1795460000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE integrations ADD COLUMN next_run_at timestamptz');
    await queryRunner.query(
      'CREATE INDEX integrations_due ON integrations (next_run_at) WHERE deleted_at IS NULL AND next_run_at IS NOT NULL',
    );
    await queryRunner.query(`
      CREATE TABLE integration_watermarks (
        integration_id uuid NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
        task_index integer NOT NULL CHECK (task_index >= 0),
        task_type text NOT NULL,
        at timestamptz NOT NULL,
        key text NOT NULL,
        rows_sent bigint NOT NULL DEFAULT 0,
        last_job_id uuid REFERENCES jobs(id) ON DELETE SET NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (integration_id, task_index)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE integration_watermarks');
    await queryRunner.query('DROP INDEX integrations_due');
    await queryRunner.query('ALTER TABLE integrations DROP COLUMN next_run_at');
  }
}
