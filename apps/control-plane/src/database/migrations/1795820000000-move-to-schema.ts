import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A move onto the account's own server lands in the schema the customer chose (the app's), not
 * in `account_<id>`: the move keeps the target's schema beside the source's. Null: the same
 * name on both warehouses, as every move between platform warehouses.
 */
export class MoveToSchema1795820000000 implements MigrationInterface {
  name = 'MoveToSchema1795820000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      "ALTER TABLE warehouse_moves ADD COLUMN to_schema text CHECK (to_schema ~ '^[a-z_][a-z0-9_]{0,62}$')",
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE warehouse_moves DROP COLUMN to_schema');
  }
}
