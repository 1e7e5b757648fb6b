import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A customer's postgres_warehouse app is a warehouse of the registry: the row links to its app
 * (app_id) and carries the schema the account's tables go to (the app's `schema`), since a
 * customer's server is loaded in the schema the customer chose, never in `account_<id>`. Rows
 * for apps saved before this migration are created at the control plane's start: only the
 * running process holds the credential keys that open the app's password and seal it again.
 */
export class CustomerWarehouses1795720000000 implements MigrationInterface {
  name = 'CustomerWarehouses1795720000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouses
        ADD COLUMN app_id uuid UNIQUE REFERENCES apps (id) ON DELETE CASCADE,
        ADD COLUMN schema text CHECK (schema ~ '^[a-z_][a-z0-9_]{0,62}$'),
        ADD CONSTRAINT warehouses_customer_app
          CHECK ((owner = 'customer') = (app_id IS NOT NULL AND schema IS NOT NULL))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouses
        DROP CONSTRAINT warehouses_customer_app,
        DROP COLUMN schema,
        DROP COLUMN app_id`);
  }
}
