export { warehouseSchemaFor } from '@pipeline/tenancy';

export function warehouseTablesFor(syncType: string, importTasks: readonly string[]): string[] {
  if (syncType === 'web_tracking') return ['events', 'users', 'groups', 'aliases'];
  return importTasks.map((task) => `${syncType}_${task}`);
}
