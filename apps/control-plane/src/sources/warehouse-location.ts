/**
 * Where an account's data lands in the warehouse: one schema per account, one table per
 * imported stream. The delivery consumers' warehouse loader must use the same names.
 */
export function warehouseSchemaFor(accountId: string): string {
  return `account_${accountId.replace(/-/g, '')}`;
}

export function warehouseTablesFor(syncType: string, importTasks: readonly string[]): string[] {
  if (syncType === 'web_tracking') return ['events', 'users', 'groups', 'aliases'];
  return importTasks.map((task) => `${syncType}_${task}`);
}
