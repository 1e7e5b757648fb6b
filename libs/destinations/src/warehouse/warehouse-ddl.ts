import { warehouseTables, type WarehouseTable } from '@pipeline/events';

export const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/** Rows of users and groups are one per id (upserted); events and aliases one per message. */
export const conflictKey: Record<WarehouseTable, string> = {
  events: 'message_id',
  aliases: 'message_id',
  users: 'user_id',
  groups: 'group_id',
};

function createTable(schema: string, table: WarehouseTable): string {
  const columns = Object.entries(warehouseTables[table]).map(([name, type]) => {
    const key = conflictKey[table] === name;
    return `${quoteIdent(name)} ${type}${key ? ' PRIMARY KEY' : ''}`;
  });
  return `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${quoteIdent(table)} (${columns.join(', ')})`;
}

/**
 * Versioned migrations of an account's warehouse schema, applied in order and recorded in
 * `<schema>._migrations`. Append; never edit a released step.
 */
export const warehouseMigrations: { version: number; statements: (schema: string) => string[] }[] = [
  {
    version: 1,
    statements: (schema) => [
      ...(['events', 'users', 'groups', 'aliases'] as const).map((table) => createTable(schema, table)),
      `CREATE INDEX IF NOT EXISTS events_timestamp ON ${quoteIdent(schema)}.events (timestamp)`,
      `CREATE INDEX IF NOT EXISTS events_user ON ${quoteIdent(schema)}.events (user_id)`,
    ],
  },
];
