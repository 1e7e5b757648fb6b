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

/** A source stream's table name (`<app type>_<stream>`), checked as an identifier before use. */
export function checkStreamTableName(name: string): string {
  if (!streamTableName.test(name)) throw new Error(`invalid stream table name ${name}`);
  return name;
}
