import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A platform warehouse may be a ClickHouse server. A customer's warehouse stays PostgreSQL: it
 * is a postgres_warehouse app. Down refuses while a ClickHouse warehouse is registered (its
 * accounts would point at a server the old version cannot open): move them off first.
 */
export class ClickHouseWarehouses1795900000000 implements MigrationInterface {
  name = 'ClickHouseWarehouses1795900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouses
        DROP CONSTRAINT warehouses_engine_check,
        ADD CONSTRAINT warehouses_engine_check CHECK (engine IN ('postgres', 'clickhouse')),
        ADD CONSTRAINT warehouses_customer_postgres CHECK (owner <> 'customer' OR engine = 'postgres')`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouses
        DROP CONSTRAINT warehouses_customer_postgres,
        DROP CONSTRAINT warehouses_engine_check,
        ADD CONSTRAINT warehouses_engine_check CHECK (engine IN ('postgres'))`);
  }
}
