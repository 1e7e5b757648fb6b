import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A warehouse may be a ClickHouse server: a platform one the operator adds, or a customer's own
 * as a clickhouse_warehouse app (its `schema` is the ClickHouse database the account's tables go
 * in, a plain lowercase identifier as every schema here). Down refuses while a ClickHouse
 * warehouse is registered (its accounts would point at a server the old version cannot open):
 * move them off, and delete the apps, first.
 */
export class ClickHouseWarehouses1795900000000 implements MigrationInterface {
  name = 'ClickHouseWarehouses1795900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouses
        DROP CONSTRAINT warehouses_engine_check,
        ADD CONSTRAINT warehouses_engine_check CHECK (engine IN ('postgres', 'clickhouse'))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      ALTER TABLE warehouses
        DROP CONSTRAINT warehouses_engine_check,
        ADD CONSTRAINT warehouses_engine_check CHECK (engine IN ('postgres'))`);
  }
}
