import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Usage metering: one row per account per UTC day with what the service spent (bytes stored,
 * bytes its warehouse queries processed, compute milliseconds, rows synced) and the costs from
 * the price list in force when it was metered; and the measured query bytes as they happen.
 */
export class CreateUsage1795500000000 implements MigrationInterface {
  name = 'CreateUsage1795500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE usage_query_bytes (
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        day date NOT NULL,
        purpose text NOT NULL CHECK (purpose IN ('query', 'model_query')),
        bytes bigint NOT NULL DEFAULT 0 CHECK (bytes >= 0),
        queries integer NOT NULL DEFAULT 0,
        PRIMARY KEY (account_id, day, purpose)
      )`);
    await queryRunner.query(`
      CREATE TABLE usage_daily (
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        day date NOT NULL,
        storage_bytes bigint NOT NULL,
        query_bytes bigint NOT NULL,
        model_query_bytes bigint NOT NULL,
        compute_ms bigint NOT NULL,
        model_compute_ms bigint NOT NULL,
        sync_rows bigint NOT NULL,
        tracking_rows bigint NOT NULL,
        storage_cost_usd numeric NOT NULL,
        query_cost_usd numeric NOT NULL,
        model_query_cost_usd numeric NOT NULL,
        compute_cost_usd numeric NOT NULL,
        model_compute_cost_usd numeric NOT NULL,
        sync_rows_cost_usd numeric NOT NULL,
        metered_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, day)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE usage_daily');
    await queryRunner.query('DROP TABLE usage_query_bytes');
  }
}
