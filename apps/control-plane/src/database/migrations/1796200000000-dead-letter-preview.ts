import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dead-letter index stores what the list shows (a capped preview of the first events and
 * their count) and the write key of each record, so neither the list nor a replay page reads a
 * whole record it does not send (SECURITY.md, the dead-letter row of the threat table). Rows indexed before
 * have no preview: `dead_letter_preview` computes one in PostgreSQL when such a row is listed,
 * so no record body ever reaches the control plane for a list, and nothing is rewritten here
 * (a table of many 512 KB rows would make this migration as long as a full copy).
 *
 * The second index serves the per-account cap (the account's rows, newest first) and the
 * retention sweep (rows by last seen).
 */
export class DeadLetterPreview1796200000000 implements MigrationInterface {
  name = 'DeadLetterPreview1796200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE dead_letters
        ADD COLUMN preview text,
        ADD COLUMN event_count integer,
        ADD COLUMN write_key_id text`);
    await queryRunner.query(
      'CREATE INDEX dead_letters_account_last_seen ON dead_letters (account_id, last_seen_at DESC, id DESC)',
    );
    await queryRunner.query('CREATE INDEX dead_letters_last_seen ON dead_letters (last_seen_at)');
    // The preview of a row indexed before this migration, as the index writes it since (its
    // first `max_events` events, each over `max_event_bytes` as JSON shown as a stub), '[]' for
    // a value PostgreSQL cannot read as JSON (a NUL escape, bad UTF-8): the list never fails on
    // an old row.
    await queryRunner.query(`
      CREATE FUNCTION dead_letter_preview(value bytea, max_events integer, max_event_bytes integer)
      RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
      DECLARE
        events jsonb;
      BEGIN
        events := convert_from(value, 'UTF8')::jsonb -> 'events';
        IF jsonb_typeof(events) IS DISTINCT FROM 'array' THEN
          RETURN '[]';
        END IF;
        RETURN COALESCE((
          SELECT jsonb_agg(
                   CASE WHEN octet_length(e::text) > max_event_bytes
                     THEN jsonb_build_object('messageId', e -> 'messageId', 'type', e -> 'type', 'truncated', true)
                     ELSE e END
                   ORDER BY i)
            FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, i)
           WHERE i <= max_events), '[]'::jsonb)::text;
      EXCEPTION WHEN others THEN
        RETURN '[]';
      END $$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP FUNCTION dead_letter_preview(bytea, integer, integer)');
    await queryRunner.query('DROP INDEX dead_letters_last_seen');
    await queryRunner.query('DROP INDEX dead_letters_account_last_seen');
    await queryRunner.query(`
      ALTER TABLE dead_letters DROP COLUMN preview, DROP COLUMN event_count, DROP COLUMN write_key_id`);
  }
}
