import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Per-key overrides of the shared ingestion rate limits (null: the service defaults). */
export class WriteKeyRateLimits1795320137749 implements MigrationInterface {
  name = 'WriteKeyRateLimits1795320137749';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE write_keys
        ADD COLUMN rate_limit_events_per_second integer CHECK (rate_limit_events_per_second > 0),
        ADD COLUMN rate_limit_events_per_day integer CHECK (rate_limit_events_per_day > 0)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      'ALTER TABLE write_keys DROP COLUMN rate_limit_events_per_second, DROP COLUMN rate_limit_events_per_day',
    );
  }
}
