import { warehouseSchemaFor } from '@pipeline/tenancy';

const schemaName = /^account_[0-9a-f]{32}$/;
const streamTableName = /^[a-z][a-z0-9_]{0,62}$/;

export const warehouseTableNames = ['events', 'users', 'groups', 'aliases'] as const;
export type WarehouseTableName = (typeof warehouseTableNames)[number];

/**
 * The account's warehouse schema (`account_<id without dashes>`). Derived from the account id,
 * never from input, and checked again before it is spliced into SQL: a schema of another shape
 * could name another tenant's data or carry SQL.
 */
export function warehouseSchemaOf(accountId: string): string {
  const schema = warehouseSchemaFor(accountId);
  if (!schemaName.test(schema)) throw new Error('invalid account id for a warehouse schema');
  return schema;
}

/** `"account_…"."<table>"` for a known table name. */
export function warehouseTable(accountId: string, table: WarehouseTableName): string {
  if (!warehouseTableNames.includes(table)) throw new Error(`unknown warehouse table ${String(table)}`);
  return `"${warehouseSchemaOf(accountId)}"."${table}"`;
}

/** A source stream's table name (`<app type>_<stream>`), checked as an identifier before use. */
export function checkStreamTableName(name: string): string {
  if (!streamTableName.test(name)) throw new Error(`invalid stream table name ${name}`);
  return name;
}

/** `"account_…"."<stream table>"`. */
export const streamTableOf = (accountId: string, name: string): string =>
  `"${warehouseSchemaOf(accountId)}"."${checkStreamTableName(name)}"`;

/** Rows per FETCH of a batch cursor: a whole number, at least 1. */
export const cursorFetchRows = (batchRows: number): number => Math.max(1, Math.floor(batchRows));
