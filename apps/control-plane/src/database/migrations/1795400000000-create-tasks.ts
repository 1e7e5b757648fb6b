import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tasks (agent goals started from a template) and their runs. A run is also the work queue's
 * item: workers claim pending runs with FOR UPDATE SKIP LOCKED, keep `heartbeat_at` fresh while
 * they execute, and a reaper requeues or fails runs whose heartbeat went stale.
 */
export class CreateTasks1795400000000 implements MigrationInterface {
  name = 'CreateTasks1795400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE tasks (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        template_id text NOT NULL,
        template_version integer NOT NULL CHECK (template_version > 0),
        title text NOT NULL CHECK (length(title) BETWEEN 1 AND 200),
        params jsonb NOT NULL DEFAULT '{}',
        created_by_api_key_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query('CREATE INDEX tasks_account ON tasks (account_id, created_at DESC)');

    await queryRunner.query(`
      CREATE TABLE task_runs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        task_id uuid NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        status text NOT NULL CHECK (status IN ('pending', 'running', 'succeeded', 'failed', 'cancelled')),
        params jsonb NOT NULL DEFAULT '{}',
        progress jsonb NOT NULL DEFAULT '{}',
        result jsonb,
        error jsonb,
        attempts integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        worker_id text,
        heartbeat_at timestamptz,
        cancel_requested_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((status = 'running') = (worker_id IS NOT NULL)),
        CHECK ((status IN ('succeeded', 'failed', 'cancelled')) = (finished_at IS NOT NULL))
      )`);
    // At most one pending or running run per task: the database decides, so two starts cannot both win.
    await queryRunner.query(
      "CREATE UNIQUE INDEX task_runs_one_active ON task_runs (task_id) WHERE status IN ('pending', 'running')",
    );
    await queryRunner.query(
      "CREATE INDEX task_runs_queue ON task_runs (created_at) WHERE status = 'pending'",
    );
    await queryRunner.query(
      "CREATE INDEX task_runs_heartbeat ON task_runs (heartbeat_at) WHERE status = 'running'",
    );
    await queryRunner.query('CREATE INDEX task_runs_task ON task_runs (task_id, created_at DESC)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE task_runs');
    await queryRunner.query('DROP TABLE tasks');
  }
}
