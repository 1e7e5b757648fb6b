import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dead-letter index (docs/management-api.md, "Dead letters"): one row per account, target
 * and origin (the outbox record a delivery came from), so a replayed record that dead-letters
 * again updates its row. The record itself (key, value) is kept to replay it, and the Kafka
 * position it was last read at, so reading one record twice counts it once.
 */
export class DeadLetters1796000000000 implements MigrationInterface {
  name = 'DeadLetters1796000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE dead_letters (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
        destination text NOT NULL,
        target text NOT NULL,
        origin text NOT NULL,
        reason text NOT NULL,
        reason_code text NOT NULL,
        attempts integer NOT NULL,
        permanent boolean NOT NULL,
        dead_letter_count integer NOT NULL DEFAULT 1,
        first_seen_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'replayed', 'discarded')),
        replayed_at timestamptz,
        discarded_at timestamptz,
        message_ids text[] NOT NULL,
        record_key bytea,
        record_value bytea NOT NULL,
        kafka_topic text NOT NULL,
        kafka_partition integer NOT NULL,
        kafka_offset bigint NOT NULL,
        CONSTRAINT dead_letters_record UNIQUE (account_id, target, origin)
      )`);
    await queryRunner.query(
      'CREATE INDEX dead_letters_account_status ON dead_letters (account_id, status, last_seen_at DESC)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE dead_letters');
  }
}
