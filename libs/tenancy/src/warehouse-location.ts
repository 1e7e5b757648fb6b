/**
 * Where an account's data lands in the warehouse: one schema per account. The control plane
 * shows it, the warehouse loader writes to it.
 */
export function warehouseSchemaFor(accountId: string): string {
  return `account_${accountId.replace(/-/g, '').toLowerCase()}`;
}
