import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Quarantined events (docs/tracking-plans.md, "Quarantine"): each event a tracking plan's policy
 * kept out of a destination, one row per event of a `plan_quarantined` dead letter, which holds
 * the record itself. A row goes with its dead letter (retention, the account's cap, an erasure):
 * the quarantine is a view of the dead letters, never a second copy of the events. Names and
 * ids are text with NUL replaced (PostgreSQL's text refuses it); `violations` is JSON text
 * (jsonb refuses `\u0000` in a string, and a property name in a path may hold one).
 */
export class QuarantinedEvents1796500000000 implements MigrationInterface {
  name = 'QuarantinedEvents1796500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE quarantined_events (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        dead_letter_id uuid NOT NULL REFERENCES dead_letters(id) ON DELETE CASCADE,
        position integer NOT NULL,
        message_id text NOT NULL,
        write_key_id text,
        destination text NOT NULL,
        target text NOT NULL,
        plan_id text NOT NULL,
        plan_version integer,
        event_type text NOT NULL,
        event_name text,
        codes text[] NOT NULL,
        violations text NOT NULL,
        received_at timestamptz NOT NULL,
        status text NOT NULL DEFAULT 'quarantined',
        replayed_at timestamptz,
        replayed_version integer,
        discarded_at timestamptz,
        UNIQUE (dead_letter_id, position)
      )`);
    await queryRunner.query(
      'CREATE INDEX quarantined_events_account ON quarantined_events (account_id, status, received_at DESC, id DESC)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE quarantined_events');
  }
}
