import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The usage endpoints answer from what the metering job stored; this row says how the job's
 * last attempt for the account went, so they can tell "nothing metered yet" from "the
 * warehouse could not be read" (503 warehouse_unavailable) without reading the warehouse.
 */
export class UsageMeteringState1795510000000 implements MigrationInterface {
  name = 'UsageMeteringState1795510000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE usage_metering_state (
        account_id uuid PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
        succeeded_at timestamptz,
        failed_at timestamptz,
        failure_code text
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE usage_metering_state');
  }
}
