import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Warehouses become a resource: the servers accounts' warehouse data lives on, and where each
 * account is placed. The rows are filled at the control plane's start (the default warehouse from
 * WAREHOUSE_URL, every account placed on it), since only the running process knows that URL and
 * the credential keys that seal its password.
 */
export class CreateWarehouses1795700000000 implements MigrationInterface {
  name = 'CreateWarehouses1795700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE warehouses (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        name text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
        engine text NOT NULL CHECK (engine IN ('postgres')),
        owner text NOT NULL CHECK (owner IN ('platform', 'customer')),
        account_id uuid REFERENCES accounts (id) ON DELETE CASCADE,
        host text NOT NULL CHECK (length(host) BETWEEN 1 AND 253),
        port integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
        database text NOT NULL CHECK (length(database) BETWEEN 1 AND 63),
        "user" text NOT NULL CHECK (length("user") BETWEEN 1 AND 63),
        password_ciphertext text NOT NULL,
        password_key_id text NOT NULL,
        tls_mode text NOT NULL CHECK (tls_mode IN ('disable', 'require', 'verify-full')),
        max_connections integer NOT NULL DEFAULT 10 CHECK (max_connections BETWEEN 1 AND 1000),
        is_default boolean NOT NULL DEFAULT false,
        status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'unavailable', 'misconfigured')),
        status_detail text CHECK (length(status_detail) <= 500),
        status_changed_at timestamptz NOT NULL DEFAULT now(),
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT warehouses_owner_account CHECK ((owner = 'platform') = (account_id IS NULL)),
        CONSTRAINT warehouses_default_is_platform CHECK (NOT is_default OR owner = 'platform')
      )`);
    // At most one default; setting another one clears the old flag in the same transaction.
    await queryRunner.query(
      'CREATE UNIQUE INDEX warehouses_one_default ON warehouses (is_default) WHERE is_default',
    );
    await queryRunner.query(`
      CREATE TABLE account_warehouses (
        account_id uuid PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
        warehouse_id uuid NOT NULL REFERENCES warehouses (id) ON DELETE RESTRICT,
        schema text NOT NULL CHECK (schema ~ '^[a-z_][a-z0-9_]{0,62}$'),
        epoch integer NOT NULL DEFAULT 1 CHECK (epoch >= 1),
        placed_at timestamptz NOT NULL DEFAULT now()
      )`);
    await queryRunner.query(
      'CREATE INDEX account_warehouses_by_warehouse ON account_warehouses (warehouse_id)',
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP TABLE account_warehouses');
    await queryRunner.query('DROP TABLE warehouses');
  }
}
