import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The fair claim (work-queue/pg-work-queue.ts) groups waiting items by account for their oldest
 * one and counts each account's running items, on every poll of every worker: these partial
 * indexes keep both to the waiting and running rows instead of the whole history.
 */
export class FairQueue1795610000000 implements MigrationInterface {
  name = 'FairQueue1795610000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      "CREATE INDEX jobs_waiting_by_account ON jobs (account_id, created_at, id) WHERE status = 'queued'",
    );
    await queryRunner.query(
      "CREATE INDEX jobs_running_by_account ON jobs (account_id) WHERE status = 'running'",
    );
    await queryRunner.query(
      "CREATE INDEX task_runs_waiting_by_account ON task_runs (account_id, created_at, id) WHERE status = 'pending'",
    );
    await queryRunner.query(
      "CREATE INDEX task_runs_running_by_account ON task_runs (account_id) WHERE status = 'running'",
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP INDEX task_runs_running_by_account');
    await queryRunner.query('DROP INDEX task_runs_waiting_by_account');
    await queryRunner.query('DROP INDEX jobs_running_by_account');
    await queryRunner.query('DROP INDEX jobs_waiting_by_account');
  }
}
