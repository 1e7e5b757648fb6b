import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The sync engine: jobs become a work queue like task_runs (claim, heartbeat, reaper, retry
 * backoff in `run_after`, the milliseconds all its attempts ran in `compute_ms`), sources get the time of their next scheduled sync, and each source
 * stream keeps the cursor its last successful page reached.
 */
export class SyncEngine1795450000000 implements MigrationInterface {
  name = 'SyncEngine1795450000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE jobs
        ADD COLUMN attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        ADD COLUMN worker_id text,
        ADD COLUMN heartbeat_at timestamptz,
        ADD COLUMN run_after timestamptz NOT NULL DEFAULT now(),
        ADD COLUMN updated_at timestamptz NOT NULL DEFAULT now(),
        ADD COLUMN compute_ms bigint NOT NULL DEFAULT 0 CHECK (compute_ms >= 0),
        ADD CONSTRAINT jobs_running_has_worker CHECK ((status = 'running') = (worker_id IS NOT NULL))`);
    await queryRunner.query("CREATE INDEX jobs_queue ON jobs (created_at) WHERE status = 'queued'");
    await queryRunner.query("CREATE INDEX jobs_heartbeat ON jobs (heartbeat_at) WHERE status = 'running'");
    await queryRunner.query('CREATE INDEX jobs_integration ON jobs (integration_id, created_at DESC)');

    await queryRunner.query('ALTER TABLE sources ADD COLUMN next_sync_at timestamptz');
    await queryRunner.query(
      'CREATE INDEX sources_due ON sources (next_sync_at) WHERE deleted_at IS NULL AND next_sync_at IS NOT NULL',
    );

    await queryRunner.query(`
      CREATE TABLE source_stream_states (
        source_id uuid NOT NULL REFERENCES sources(id) ON DELETE CASCADE,
        stream text NOT NULL,
        cursor text,
        rows_synced bigint NOT NULL DEFAULT 0,
        last_job_id uuid REFERENCES jobs(id) ON DELETE SET NULL,
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (source_id, stream)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE source_stream_states');
    await queryRunner.query('DROP INDEX sources_due');
    await queryRunner.query('ALTER TABLE sources DROP COLUMN next_sync_at');
    await queryRunner.query('DROP INDEX jobs_integration');
    await queryRunner.query('DROP INDEX jobs_heartbeat');
    await queryRunner.query('DROP INDEX jobs_queue');
    await queryRunner.query(`
      ALTER TABLE jobs DROP CONSTRAINT jobs_running_has_worker,
        DROP COLUMN compute_ms, DROP COLUMN updated_at, DROP COLUMN run_after, DROP COLUMN heartbeat_at,
        DROP COLUMN worker_id, DROP COLUMN attempts`);
  }
}
