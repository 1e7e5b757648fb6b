import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A warehouse may be a ClickHouse server: the customer's own, as a clickhouse_warehouse app (its
 * `schema` is the ClickHouse database the account's tables go in, a plain lowercase identifier
 * as every schema here).
 */
export class ClickhouseWarehouses1795900000000 implements MigrationInterface {
  name = 'ClickhouseWarehouses1795900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE warehouses DROP CONSTRAINT warehouses_engine_check');
    await queryRunner.query(
      "ALTER TABLE warehouses ADD CONSTRAINT warehouses_engine_check CHECK (engine IN ('postgres', 'clickhouse'))",
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('ALTER TABLE warehouses DROP CONSTRAINT warehouses_engine_check');
    await queryRunner.query(
      "ALTER TABLE warehouses ADD CONSTRAINT warehouses_engine_check CHECK (engine IN ('postgres'))",
    );
  }
}
