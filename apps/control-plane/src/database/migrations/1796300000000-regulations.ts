import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Privacy regulations (docs/privacy.md). `regulation_keys` holds each account's HMAC key,
 * sealed like app credentials: every service sees subjects only as keyed hashes.
 * `regulation_subjects` is what ingestion and the consumers decide events by (one row per
 * account and hash, the latest suppression and the latest deletion cut-off). `regulations` is
 * the audit record: its raw ids and captured emails are sealed while it runs and erased when it
 * finishes. `regulation_targets` is one row per place a regulation erases from, with its progress,
 * so a worker that dies mid-batch resumes without doing a target twice; a regulation is worked by
 * one worker at a time, under a lease that another takes over when it lapses.
 */
export class Regulations1796300000000 implements MigrationInterface {
  name = 'Regulations1796300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE regulation_keys (
        account_id uuid PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
        sealed_key text NOT NULL,
        key_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(`
      CREATE TABLE regulations (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        regulation_type text NOT NULL,
        subject_type text NOT NULL,
        subject_count integer NOT NULL,
        status text NOT NULL,
        requested_by text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        finished_at timestamptz,
        cutoff timestamptz,
        sealed_subjects text,
        sealed_identities text,
        seal_key_id text,
        fence jsonb,
        fence_at timestamptz,
        lease_owner text,
        lease_until timestamptz
      )`);
    await queryRunner.query(
      'CREATE INDEX regulations_account_created ON regulations (account_id, created_at DESC, id DESC)',
    );
    await queryRunner.query(
      `CREATE INDEX regulations_unfinished ON regulations (created_at) WHERE status IN ('initialized', 'running')`,
    );
    await queryRunner.query(`
      CREATE TABLE regulation_subjects (
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        subject_hash text NOT NULL,
        subject_type text NOT NULL,
        suppressed boolean NOT NULL DEFAULT false,
        suppressed_since timestamptz,
        suppressed_by uuid,
        delete_cutoff timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (account_id, subject_hash)
      )`);
    await queryRunner.query(`
      CREATE TABLE regulation_targets (
        regulation_id uuid NOT NULL REFERENCES regulations(id) ON DELETE CASCADE,
        target text NOT NULL,
        kind text NOT NULL,
        name text NOT NULL,
        app_type text,
        status text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        progress integer NOT NULL DEFAULT 0,
        cursor text,
        erased integer NOT NULL DEFAULT 0,
        vendor_job_ids text[] NOT NULL DEFAULT '{}',
        last_error_code text,
        last_error_message text,
        next_attempt_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (regulation_id, target)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE regulation_targets');
    await queryRunner.query('DROP TABLE regulation_subjects');
    await queryRunner.query('DROP TABLE regulations');
    await queryRunner.query('DROP TABLE regulation_keys');
  }
}
