import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Tenant functions (docs/management-api.md#functions). A function's draft is edited in place;
 * publishing copies it into `function_versions`, which a trigger keeps from ever being updated
 * (`code_hash` is the sha256 of `code`, and dead letters name versions for good). Code is text,
 * not bytea: it is JavaScript source, and the API refuses U+0000 and unpaired surrogates, which
 * text cannot hold. A deleted function keeps its row (`deleted_at`) and versions, so names are
 * unique among live functions only. A target binds at most one version
 * (`function_bindings`): an integration or a write key by its id, the account's warehouse with
 * `target_id` null (one per account, by its own partial index). A bound version cannot be
 * deleted under its binding (no cascade).
 */
export class Functions1796700000000 implements MigrationInterface {
  name = 'Functions1796700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE functions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text NOT NULL DEFAULT '',
        kind text NOT NULL CHECK (kind IN ('destination', 'source')),
        draft_code text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        deleted_at timestamptz
      )`);
    await queryRunner.query(
      'CREATE UNIQUE INDEX functions_account_name ON functions (account_id, name) WHERE deleted_at IS NULL',
    );
    await queryRunner.query(
      'CREATE INDEX functions_account_created ON functions (account_id, created_at DESC, id DESC) WHERE deleted_at IS NULL',
    );
    await queryRunner.query(`
      CREATE TABLE function_versions (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        function_id uuid NOT NULL REFERENCES functions(id) ON DELETE CASCADE,
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        version integer NOT NULL CHECK (version >= 1),
        code text NOT NULL,
        code_hash text NOT NULL CHECK (code_hash ~ '^[0-9a-f]{64}$'),
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (function_id, version)
      )`);
    await queryRunner.query(`
      CREATE FUNCTION function_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'function_versions are immutable';
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER function_versions_immutable BEFORE UPDATE ON function_versions
      FOR EACH ROW EXECUTE FUNCTION function_versions_immutable()`);
    await queryRunner.query(`
      CREATE TABLE function_bindings (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
        target_type text NOT NULL CHECK (target_type IN ('integration', 'warehouse', 'write_key')),
        target_id uuid,
        function_version_id uuid NOT NULL REFERENCES function_versions(id),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((target_type = 'warehouse') = (target_id IS NULL))
      )`);
    await queryRunner.query(
      'CREATE UNIQUE INDEX function_bindings_target ON function_bindings (target_type, target_id) WHERE target_id IS NOT NULL',
    );
    await queryRunner.query(
      "CREATE UNIQUE INDEX function_bindings_warehouse ON function_bindings (account_id) WHERE target_type = 'warehouse'",
    );
    await queryRunner.query(
      'CREATE INDEX function_bindings_version ON function_bindings (function_version_id)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE function_bindings');
    await queryRunner.query('DROP TABLE function_versions');
    await queryRunner.query('DROP FUNCTION function_versions_immutable()');
    await queryRunner.query('DROP TABLE functions');
  }
}
