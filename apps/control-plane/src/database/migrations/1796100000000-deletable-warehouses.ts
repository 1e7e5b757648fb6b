import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A warehouse entry can be deleted once it holds no account and no active move names it. A
 * finished move's record outlives the warehouses it names: its side becomes null rather than
 * keep every warehouse that was ever moved from undeletable. An active move still needs both
 * sides: the check turns the deletion of one into an error even if the registry's own check
 * raced with the move's start.
 */
export class DeletableWarehouses1796100000000 implements MigrationInterface {
  name = 'DeletableWarehouses1796100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouse_moves
        ALTER COLUMN from_warehouse_id DROP NOT NULL,
        ALTER COLUMN to_warehouse_id DROP NOT NULL,
        DROP CONSTRAINT warehouse_moves_from_warehouse_id_fkey,
        DROP CONSTRAINT warehouse_moves_to_warehouse_id_fkey,
        ADD CONSTRAINT warehouse_moves_from_warehouse_id_fkey
          FOREIGN KEY (from_warehouse_id) REFERENCES warehouses (id) ON DELETE SET NULL,
        ADD CONSTRAINT warehouse_moves_to_warehouse_id_fkey
          FOREIGN KEY (to_warehouse_id) REFERENCES warehouses (id) ON DELETE SET NULL,
        ADD CONSTRAINT warehouse_moves_active_sides
          CHECK (stage IN ('done', 'failed') OR (from_warehouse_id IS NOT NULL AND to_warehouse_id IS NOT NULL))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    // A record whose warehouse was deleted cannot name it again.
    await queryRunner.query(
      'DELETE FROM warehouse_moves WHERE from_warehouse_id IS NULL OR to_warehouse_id IS NULL',
    );
    await queryRunner.query(`
      ALTER TABLE warehouse_moves
        DROP CONSTRAINT warehouse_moves_active_sides,
        DROP CONSTRAINT warehouse_moves_from_warehouse_id_fkey,
        DROP CONSTRAINT warehouse_moves_to_warehouse_id_fkey,
        ADD CONSTRAINT warehouse_moves_from_warehouse_id_fkey
          FOREIGN KEY (from_warehouse_id) REFERENCES warehouses (id) ON DELETE RESTRICT,
        ADD CONSTRAINT warehouse_moves_to_warehouse_id_fkey
          FOREIGN KEY (to_warehouse_id) REFERENCES warehouses (id) ON DELETE RESTRICT,
        ALTER COLUMN from_warehouse_id SET NOT NULL,
        ALTER COLUMN to_warehouse_id SET NOT NULL`);
  }
}
