import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CreateManagementResources1795317946270 implements MigrationInterface {
  name = 'CreateManagementResources1795317946270';

  async up(queryRunner: QueryRunner): Promise<void> {
    // API keys and write keys are stored as SHA-256 of the full key: they are 256-bit random
    // values, so a slow hash adds nothing, and lookup by hash stays an index probe.
    await queryRunner.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        key_prefix text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        scopes text[] NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        last_used_at timestamptz,
        revoked_at timestamptz
      )`);
    await queryRunner.query('CREATE INDEX api_keys_account ON api_keys (account_id)');

    await queryRunner.query(`
      CREATE TABLE write_keys (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
        key_prefix text NOT NULL,
        key_hash text NOT NULL UNIQUE,
        allowed_origins text[] NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        revoked_at timestamptz
      )`);
    await queryRunner.query('CREATE INDEX write_keys_account ON write_keys (account_id)');

    await queryRunner.query(`
      CREATE TABLE apps (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        app_type text NOT NULL,
        display_name text NOT NULL CHECK (length(display_name) BETWEEN 1 AND 200),
        role text[] NOT NULL CHECK (cardinality(role) BETWEEN 1 AND 2),
        state text NOT NULL CHECK (state IN ('active', 'inactive', 'deleted')),
        error_message text,
        last_sync_at timestamptz,
        config jsonb NOT NULL DEFAULT '{}',
        permissions jsonb NOT NULL DEFAULT '[]',
        credentials_ciphertext text,
        credentials_key_id text,
        consecutive_failure_count integer NOT NULL DEFAULT 0,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz,
        CHECK ((credentials_ciphertext IS NULL) = (credentials_key_id IS NULL)),
        CHECK ((state = 'deleted') = (deleted_at IS NOT NULL))
      )`);
    // A deleted app does not block re-creating its name.
    await queryRunner.query(
      'CREATE UNIQUE INDEX apps_account_name_live ON apps (account_id, lower(display_name)) WHERE deleted_at IS NULL',
    );

    await queryRunner.query(`
      CREATE TABLE sources (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        app_id uuid NOT NULL REFERENCES apps(id),
        sync_type text NOT NULL,
        import_tasks text[] NOT NULL DEFAULT '{}',
        sync_frequency_value integer NOT NULL CHECK (sync_frequency_value > 0),
        sync_frequency_unit text NOT NULL CHECK (sync_frequency_unit IN ('hours', 'days')),
        sync_anchor_time text NOT NULL CHECK (sync_anchor_time ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
        sync_anchor_timezone text NOT NULL,
        rolling_period_days integer NOT NULL CHECK (rolling_period_days > 0),
        historical_sync_start_date timestamptz,
        one_off boolean NOT NULL DEFAULT false,
        config jsonb NOT NULL DEFAULT '{}',
        state text NOT NULL CHECK (state IN ('active', 'inactive', 'deleted')),
        integration_status text NOT NULL,
        last_sync_at timestamptz,
        last_error jsonb,
        consecutive_failures integer NOT NULL DEFAULT 0,
        latest_job_id uuid,
        active_import_job_id uuid,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz,
        CHECK ((state = 'deleted') = (deleted_at IS NOT NULL))
      )`);
    await queryRunner.query('CREATE INDEX sources_account ON sources (account_id, created_at DESC)');
    await queryRunner.query('CREATE INDEX sources_app ON sources (app_id)');

    await queryRunner.query(`
      CREATE TABLE integrations (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        source_app_id uuid REFERENCES apps(id),
        destination_app_id uuid NOT NULL REFERENCES apps(id),
        data_type text NOT NULL,
        config jsonb NOT NULL,
        schedule jsonb NOT NULL,
        state text NOT NULL CHECK (state IN ('active', 'inactive', 'deleted')),
        status text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'errored', 'paused', 'draft')),
        last_sync_at timestamptz,
        last_error jsonb,
        consecutive_failures integer NOT NULL DEFAULT 0,
        latest_job_id uuid,
        historical_sync_start_date timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz,
        CHECK ((state = 'deleted') = (deleted_at IS NOT NULL))
      )`);
    await queryRunner.query(
      'CREATE INDEX integrations_account ON integrations (account_id, created_at DESC)',
    );

    await queryRunner.query(`
      CREATE TABLE jobs (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        source_id uuid REFERENCES sources(id),
        integration_id uuid REFERENCES integrations(id),
        kind text NOT NULL CHECK (kind IN ('source_sync', 'integration_run')),
        trigger text NOT NULL CHECK (trigger IN ('manual', 'schedule', 'one_off', 'onboarding')),
        status text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
        rows_read bigint NOT NULL DEFAULT 0,
        rows_written bigint NOT NULL DEFAULT 0,
        error jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        started_at timestamptz,
        finished_at timestamptz,
        CHECK ((source_id IS NULL) <> (integration_id IS NULL))
      )`);
    // At most one queued or running job per source and per integration, enforced by the database.
    await queryRunner.query(
      "CREATE UNIQUE INDEX jobs_one_active_per_source ON jobs (source_id) WHERE status IN ('queued', 'running') AND source_id IS NOT NULL",
    );
    await queryRunner.query(
      "CREATE UNIQUE INDEX jobs_one_active_per_integration ON jobs (integration_id) WHERE status IN ('queued', 'running') AND integration_id IS NOT NULL",
    );
    await queryRunner.query('CREATE INDEX jobs_source ON jobs (source_id, created_at DESC)');
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of ['jobs', 'integrations', 'sources', 'apps', 'write_keys', 'api_keys']) {
      await queryRunner.query(`DROP TABLE ${table}`);
    }
  }
}
